/** The store is private (issue 28 item 4): every folder 0700, every file 0600, whatever the umask says. */
import { chmod, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { RegistryStore } from '../../src/registry/store.js';
import { curl, makeImage, pushImage, startTestRegistry, tempDir } from './helpers.js';

/** Every path under `root` (root included) whose mode lets group or others in. */
async function open(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (path: string) => {
    const info = await lstat(path);
    if ((info.mode & 0o077) !== 0) found.push(`${path} ${(info.mode & 0o777).toString(8)}`);
    if (info.isDirectory()) for (const entry of await readdir(path)) await walk(join(path, entry));
  };
  await walk(root);
  return found;
}

test('a push, an open upload session and a tag leave nothing another user can read', async (t) => {
  const previous = process.umask(0o022);
  t.teardown(() => process.umask(previous));
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  await pushImage(r.url, 'private/os', makeImage([5000, 7000]), 'v1');
  t.is((await curl(['-X', 'POST', `${r.url}/v2/private/os/blobs/uploads/`])).status, 202);
  t.deepEqual(await open(r.storage), []);
});

test('opening a store made before makes its root private again', async (t) => {
  const root = await tempDir();
  await chmod(root, 0o755);
  await RegistryStore.open(root);
  t.is((await lstat(root)).mode & 0o777, 0o700);
});
