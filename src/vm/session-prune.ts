import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { sessionsDir } from './sessions.js';

export interface PruneOptions {
  /** Only session directories nothing has written to for this long go. */
  olderThanMs: number;
  /** Why a session must stay (its domains still exist, its keeper still serves), or undefined when it may go. */
  inUse(id: string): Promise<string | undefined>;
  now?: number;
}

export interface PruneReport {
  removed: string[];
  /** Old enough but left, with the reason. */
  left: { id: string; reason: string }[];
}

/** The newest mtime of a session directory and the files directly in it (records, console logs, keys). */
async function lastWritten(dir: string): Promise<number> {
  let newest = (await lstat(dir)).mtimeMs;
  for (const entry of await readdir(dir)) {
    const info = await lstat(join(dir, entry)).catch(() => undefined);
    if (info) newest = Math.max(newest, info.mtimeMs);
  }
  return newest;
}

/**
 * Remove the caller's stale session directories (`devpivot down --prune`): under the caller's state directory,
 * owned by the caller (never followed through a symlink), untouched for `olderThanMs`, and not in use.
 */
export async function pruneSessions(state: string, options: PruneOptions): Promise<PruneReport> {
  const now = options.now ?? Date.now();
  const me = process.getuid?.() ?? 0;
  const report: PruneReport = { removed: [], left: [] };
  let entries: string[];
  try {
    entries = await readdir(sessionsDir(state));
  } catch {
    return report;
  }
  for (const id of entries.sort()) {
    const dir = join(sessionsDir(state), id);
    const info = await lstat(dir).catch(() => undefined);
    if (!info?.isDirectory()) continue; // a symlink or a stray file: not a session directory of ours
    if (info.uid !== me) {
      report.left.push({ id, reason: `owned by uid ${info.uid}` });
      continue;
    }
    if (now - (await lastWritten(dir)) < options.olderThanMs) continue;
    const reason = await options.inUse(id);
    if (reason) {
      report.left.push({ id, reason });
      continue;
    }
    await rm(dir, { recursive: true, force: true });
    report.removed.push(id);
  }
  return report;
}

/** `--older-than`: whole seconds, minutes, hours or days (`90s`, `30m`, `12h`, `7d`). */
export function parseAge(value: string): number | undefined {
  const match = /^(\d+)([smhd])$/.exec(value);
  if (!match) return undefined;
  return Number(match[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 's' | 'm' | 'h' | 'd'];
}
