/**
 * Partial blob downloads kept across runs: `<dir>/<algorithm>-<hex>.partial` holds the bytes received so far, and
 * the next download of that digest (this run or a later one) resumes with `Range` from them. One process at a
 * time owns a partial (an O_EXCL lock file with its pid; a dead owner's lock is taken over); a download that finds
 * it owned goes to its own file instead, from zero. Content-addressed, so a partial is only ever resumed into the
 * blob it is the start of, and the digest check at the end still covers every byte.
 */
import { mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { processAlive } from '../../core/process-alive.js';

export interface Partial {
  /** The file to download into (append). */
  readonly path: string;
  /** Bytes already in it. */
  readonly size: number;
  /** Give the partial up (keep: false removes it, e.g. after a digest mismatch) and release the lock. */
  release(keep: boolean): Promise<void>;
}

async function lock(file: string): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(file, 'wx');
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return false;
      const owner = Number((await readFile(file, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(owner) && owner > 0 && processAlive(owner)) return false;
      await rm(file, { force: true });
    }
  }
  return false;
}

/** The partial of `digest` in `dir`, owned by this process; undefined when another live process owns it. */
export async function takePartial(dir: string, digest: string, size: number): Promise<Partial | undefined> {
  try {
    await mkdir(dir, { recursive: true });
  } catch {
    return undefined;
  }
  const path = join(dir, `${digest.replace(':', '-')}.partial`);
  const lockFile = `${path}.lock`;
  if (!(await lock(lockFile))) return undefined;
  let have = (await stat(path).catch(() => undefined))?.size ?? 0;
  if (have > size) {
    await rm(path, { force: true });
    have = 0;
  }
  return {
    path,
    size: have,
    async release(keep) {
      if (!keep) await rm(path, { force: true });
      await rm(lockFile, { force: true });
    },
  };
}
