import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../../core/process-alive.js';

/**
 * `serving/<pid>` in the storage directory: the command of a live process whose registry serves this store.
 * gc from another process reads them: its sweep is gated only against writes of its own process
 * (storage/gc-gate.ts), so it refuses while another process serves. A marker of a process that is gone
 * (killed with SIGKILL) is ignored and removed.
 */
export interface ServingProcess {
  pid: number;
  command: string;
}

const folder = (root: string) => join(root, 'serving');

export async function markServing(root: string): Promise<() => Promise<void>> {
  const path = join(folder(root), String(process.pid));
  await writeFile(path, process.argv.join(' '), { mode: 0o600 });
  return () => rm(path, { force: true });
}

/** The live processes other than this one that serve the store at `root`. */
export async function servingProcesses(root: string): Promise<ServingProcess[]> {
  const found: ServingProcess[] = [];
  for (const entry of await readdir(folder(root)).catch(() => [] as string[])) {
    const pid = Number(entry);
    if (!/^\d+$/.test(entry) || pid === process.pid) continue;
    if (!processAlive(pid)) {
      await rm(join(folder(root), entry), { force: true });
      continue;
    }
    const command = await readFile(join(folder(root), entry), 'utf8').catch(() => '?');
    found.push({ pid, command });
  }
  return found;
}
