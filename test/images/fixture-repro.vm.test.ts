/**
 * Same key, same bytes: the fixture built in a user namespace (`unshare --map-root-user`, as devpivot runs it
 * for non-root users; here from root, so uid 0 maps to 0 and files the host's other ids own are unmapped) must
 * equal the one `npm test`'s set-up built as root — the three commits and every byte of disk.qcow2.
 * Cost: one full fixture build (about 1–2 minutes on an idle 2-core host, up to 5 next to running VMs) and
 * ~300 MB in a temporary directory, so it runs only with DEVPIVOT_TEST_REPRODUCIBLE=1.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { buildFixture, loadFixture } from '../../src/fixture/fixture.js';

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const enabled = process.env.DEVPIVOT_TEST_REPRODUCIBLE === '1';

(enabled ? test : test.skip)('a build in a user namespace equals the root build byte for byte', async (t) => {
  t.timeout(600_000);
  const root = await loadFixture();
  const cache = await mkdtemp(join(tmpdir(), 'devpivot-repro-'));
  t.teardown(() => rm(cache, { recursive: true, force: true }));
  const { fixture: userns } = await buildFixture({
    env: { ...process.env, DEVPIVOT_CACHE_DIR: cache },
    mode: 'userns',
  });
  t.is(userns.key, root.key);
  t.deepEqual(
    userns.versions.map((entry) => [entry.version, entry.commit]),
    root.versions.map((entry) => [entry.version, entry.commit]),
  );
  t.is(await sha256(userns.disk), await sha256(root.disk));
});
