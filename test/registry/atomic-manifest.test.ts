/**
 * A manifest is stored all-or-nothing (issue 28 item 4): its revision (what makes it reachable by digest) is
 * written last, after its referrer entry and its tag, so a failure between them leaves nothing reachable; a tag
 * whose new manifest never got its revision still names the manifest it named before. And an internal error
 * after the body was read is a 500 with the error body, not a reset.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { MediaType } from '../../src/oci/media-types.js';
import { curl, digestOf, makeImage, pushImage, pushManifest, startTestRegistry } from './helpers.js';

test('a tag write that fails leaves the manifest unreachable by digest (no revision without its tag)', async (t) => {
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  const image = makeImage([1000]);
  await pushImage(r.url, 'atomic/os', image, 'v0');
  // Injected failure: a non-empty directory where the tag file goes, so its rename fails.
  await mkdir(join(r.registry.store.layout.tag('atomic/os', 'v1'), 'x'), { recursive: true });
  const other = makeImage([1200]);
  for (const blob of [other.config, ...other.layers]) await r.registry.store.putBlob(blob.bytes, blob.digest);
  const put = await pushManifest(r.url, 'atomic/os', 'v1', other.manifest);
  t.is(put.status, 500, await put.text());
  t.is(
    (await curl([`${r.url}/v2/atomic/os/manifests/${other.manifest.digest}`])).status,
    404,
    'reachable by digest without its tag',
  );
});

test('a referrer entry that fails leaves the referrer unreachable by digest (no revision without its entry)', async (t) => {
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  const image = makeImage([1000]);
  await pushImage(r.url, 'atomic/os', image, 'v1');
  const empty = Buffer.from('{}');
  await r.registry.store.putBlob(empty, digestOf(empty));
  const referrer = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MediaType.ociManifest,
      artifactType: 'application/vnd.example.sig',
      config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: digestOf(empty), size: 2 },
      layers: [],
      subject: { mediaType: MediaType.ociManifest, digest: image.manifest.digest, size: image.manifest.size },
    }),
  );
  const digest = digestOf(referrer);
  await mkdir(join(r.registry.store.layout.referrer('atomic/os', image.manifest.digest, digest), 'x'), {
    recursive: true,
  });
  const put = await fetch(`${r.url}/v2/atomic/os/manifests/${digest}`, {
    method: 'PUT',
    body: referrer,
    headers: { 'Content-Type': MediaType.ociManifest },
  });
  t.is(put.status, 500, await put.text());
  t.is((await curl([`${r.url}/v2/atomic/os/manifests/${digest}`])).status, 404, 'reachable without its referrer');
});

test('a tag whose new manifest was never committed (a crash before its revision) names the one before', async (t) => {
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  const first = makeImage([1000]);
  await pushImage(r.url, 'atomic/os', first, 'latest');
  const second = makeImage([1100]);
  await pushImage(r.url, 'atomic/os', second, 'latest');
  t.is((await r.registry.store.getManifest('atomic/os', 'latest'))?.digest, second.manifest.digest);
  // What a push of a third manifest killed after its tag and before its revision leaves on disk.
  const tag = r.registry.store.layout.tag('atomic/os', 'latest');
  await writeFile(tag, `sha256:${'e'.repeat(64)}\n${second.manifest.digest}\n`);
  t.is((await r.registry.store.getManifest('atomic/os', 'latest'))?.digest, second.manifest.digest);
});

test('an internal error after the body was read is a 500 with the error body, not a reset', async (t) => {
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  const image = makeImage([1000]);
  await pushImage(r.url, 'atomic/os', image, 'v1');
  // Injected failure: the store fails once the manifest body is read.
  r.registry.store.repositories.putManifest = async () => {
    throw new Error('injected: disk on fire');
  };
  const answer = await curl([
    '-X',
    'PUT',
    '-H',
    `Content-Type: ${image.manifest.mediaType}`,
    '--data-binary',
    image.manifest.bytes.toString(),
    `${r.url}/v2/atomic/os/manifests/v2`,
  ]);
  t.is(answer.status, 500, answer.raw);
  const body = JSON.parse(answer.body) as { errors: { message: string }[] };
  t.regex(body.errors[0]?.message ?? '', /injected: disk on fire/);
});
