/**
 * A build or a local image import stopped while its tool runs (Ctrl-C during prepare): the running ostree or skopeo
 * is ended at once, the stop's reason is thrown and the work directory removed. Stand-ins that do not finish within
 * the test (a large tree's export, a slow copy) take the tools' place on PATH; without the stop they would run on.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { buildOscontainer } from '../../src/oscontainer/build.js';
import { importLocalImage } from '../../src/oscontainer/local-image.js';
import { slowTool, stopSoon, withPathFirst } from '../helpers/slow-tool.js';
import { tempDir } from '../helpers/temp.js';

test.serial(
  'a build stopped while ostree runs: ostree is ended, the reason thrown, no work directory left',
  async (t) => {
    t.timeout(10_000);
    // the build runs ostree from this process's PATH
    await withPathFirst(slowTool('ostree'), async () => {
      const workDir = tempDir('devpivot-stopbuild-');
      const build = buildOscontainer({ repo: workDir, commit: 'fixture/v2', workDir, signal: stopSoon() });
      await t.throwsAsync(build, { message: 'interrupted by SIGINT' });
      t.deepEqual(readdirSync(workDir), []);
    });
  },
);

test('a local image import stopped while skopeo copies: skopeo is ended, the reason thrown, no work left', async (t) => {
  t.timeout(10_000);
  const layout = tempDir('devpivot-stoplayout-');
  const digest = `sha256:${'a'.repeat(64)}`;
  const entry = { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest, size: 2 };
  writeFileSync(join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [entry] }));
  const workDir = join(tempDir('devpivot-stopimport-'), 'work');
  await mkdir(workDir);
  const env = { ...process.env, PATH: `${slowTool('skopeo')}:${process.env.PATH}` };
  const copy = importLocalImage({ transport: 'oci', path: layout }, '127.0.0.1:9/stop/x:1', {
    env,
    workDir,
    signal: stopSoon(),
  });
  await t.throwsAsync(copy, { message: 'interrupted by SIGINT' });
  t.deepEqual(readdirSync(workDir), []);
});
