/**
 * GC under concurrent pushes from real skopeo (issue 28 item 2): the blobs of the image are in the store, old and
 * unreferenced (their manifest deleted), so skopeo skips them; gc runs in a loop meanwhile. Every tag a push
 * created then resolves to a manifest whose blobs are all there. A stress check with real clients: the race
 * window (between a push checking its blobs and linking them) is too narrow for it to hit reliably without the
 * gate; gc-race.test.ts reproduces it deterministically.
 */
import { rm, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { collectGarbage } from '../../src/registry/gc.js';
import { makeImage, pushImage, run, startTestRegistry, tempDir, writeOciLayout } from './helpers.js';

test('gc in a loop during eight concurrent skopeo pushes never leaves a tag without its blobs', async (t) => {
  const r = await startTestRegistry();
  const work = await tempDir('devpivot-gc-skopeo-');
  t.teardown(async () => {
    await r.close();
    await rm(work, { recursive: true, force: true });
  });
  const image = makeImage([300_000, 100_000]);
  await pushImage(r.url, 'gc/app', image);
  await fetch(`${r.url}/v2/gc/app/manifests/${image.manifest.digest}`, { method: 'DELETE' });
  const old = new Date(Date.now() - 2 * 3_600_000);
  for (const blob of [image.config, ...image.layers]) {
    await utimes(r.registry.store.layout.blob(blob.digest), old, old);
    await utimes(r.registry.store.layout.layerLink('gc/app', blob.digest), old, old);
  }
  const layout = join(work, 'layout');
  await writeOciLayout(layout, image.manifest, [image.config, ...image.layers], 'v1');
  let pushing = true;
  let rounds = 0;
  const gcLoop = (async () => {
    while (pushing) {
      await collectGarbage(r.registry.store);
      rounds++;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const tags = Array.from({ length: 8 }, (_, i) => `t${i}`);
  const results = await Promise.all(
    tags.map((tag) =>
      run(
        'skopeo',
        [
          '--insecure-policy',
          'copy',
          '--dest-tls-verify=false',
          `oci:${layout}:v1`,
          `docker://${r.host}/gc/app:${tag}`,
        ],
        120_000,
      ),
    ),
  );
  pushing = false;
  await gcLoop;
  t.true(rounds > 1, `gc ran ${rounds} times during the pushes`);
  for (const [i, result] of results.entries()) {
    const stored = await r.registry.store.getManifest('gc/app', tags[i]!);
    if (result.code !== 0) continue; // a refused push is allowed; a broken tag is not
    t.truthy(stored, `${tags[i]} was pushed`);
  }
  for (const tag of tags) {
    if (!(await r.registry.store.getManifest('gc/app', tag))) continue;
    for (const blob of [image.config, ...image.layers])
      t.true(await r.registry.store.hasBlob(blob.digest), `${tag} resolves, so ${blob.digest} must be there`);
  }
});
