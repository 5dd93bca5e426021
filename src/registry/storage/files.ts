import { mkdir, open, readdir, rename, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../core/private-dir.js';

/** File helpers of the storage: "absent" is an answer, not an error; small writes are atomic. */
export function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

/** The entries of a folder, [] when it does not exist. */
export async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

/** fsync a directory, so the renames into it survive a power cut. */
export async function syncDir(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Write `data` to `temp`, fsync, rename to `path`, fsync its directory: readers see the old file or the whole new
 * one, and after a power cut the new one is there once this returns.
 */
export async function writeAtomic(temp: string, path: string, data: string): Promise<void> {
  const handle = await open(temp, 'wx', PRIVATE_FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await mkdir(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
  await rename(temp, path);
  await syncDir(dirname(path));
}
