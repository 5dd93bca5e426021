import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../../core/process-alive.js';

/**
 * Remove the temp spaces (`tmp/<pid>/`) of processes that are gone: what a crashed run left in flight. A live
 * process's space, and ours, are left alone; loose entries (the layout before per-process spaces) go too.
 */
export async function removeDeadTemps(tmp: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(tmp);
  } catch {
    return;
  }
  for (const entry of entries) {
    const pid = /^\d+$/.test(entry) ? Number(entry) : undefined;
    if (pid === process.pid || (pid !== undefined && processAlive(pid))) continue;
    await rm(join(tmp, entry), { recursive: true, force: true });
  }
}
