import { chmod, lstat, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Mode of everything devpivot keeps for its user (state directory, registry store, sessions): theirs alone. */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Create `path` as a private directory (0700; its parents as umask says), or make an existing one of the caller's
 * private: another local user cannot list or read anything under it. One owned by someone else is left as it is
 * (root's state directory read by a user, a shared --storage): the files in it are still created 0600.
 */
export async function privateDir(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await mkdir(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  const info = await lstat(path);
  if (info.isDirectory() && info.uid === process.getuid?.() && (info.mode & 0o077) !== 0)
    await chmod(path, PRIVATE_DIR_MODE);
}
