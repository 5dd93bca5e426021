import { open, readFile, rm, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { DevpivotError } from '../core/errors.js';
import { processAlive } from '../core/process-alive.js';

export interface Lock {
  release(): Promise<void>;
}

/** What a lock guards, for the error when its owner holds it too long. */
export interface LockPurpose {
  code: 'FIXTURE_LOCKED' | 'IMAGE_LOCKED';
  /** "another build", "another run downloading URL". */
  holder: string;
}

const FIXTURE_BUILD: LockPurpose = { code: 'FIXTURE_LOCKED', holder: 'another build' };

/**
 * An exclusive lock file holding the owner's pid (O_EXCL create). A lock whose owner is dead is taken over;
 * a live owner is waited for, up to `timeoutMs`.
 */
export async function acquireLock(
  path: string,
  signal?: AbortSignal,
  timeoutMs = 15 * 60_000,
  purpose: LockPurpose = FIXTURE_BUILD,
): Promise<Lock> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const handle = await open(path, 'wx', 0o644);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return { release: () => rm(path, { force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    // An empty file is a lock being written right now, unless it has stayed empty for a while.
    const young = await stat(path).then(
      (info) => Date.now() - info.mtimeMs < 5000,
      () => false,
    );
    if ((!Number.isFinite(owner) && !young) || (Number.isFinite(owner) && !processAlive(owner))) {
      await rm(path, { force: true });
      continue;
    }
    if (Date.now() > deadline)
      throw new DevpivotError(purpose.code, `${purpose.holder} (pid ${owner}) holds ${path}`, {
        hint: `wait for it to finish, or remove ${path} if pid ${owner} is not devpivot`,
      });
    signal?.throwIfAborted();
    await sleep(500, undefined, signal ? { signal } : undefined);
  }
}
