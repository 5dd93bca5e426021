/**
 * Conformance-style tests over real HTTP, grouped by the distribution spec's four workflow categories (pull,
 * push, content discovery, content management), plus the error codes and bad inputs. The Go conformance suite
 * cannot run here (no Go toolchain); these port its checks as TypeScript.
 */
import { createHash, randomBytes } from 'node:crypto';
import test from 'ava';
import {
  curl,
  DOCKER_LIST,
  DOCKER_MANIFEST,
  digestOf,
  errorCodes,
  makeImage,
  makeIndex,
  OCI_INDEX,
  OCI_MANIFEST,
  pushBlob,
  pushImage,
  pushManifest,
  startTestRegistry,
  type TestRegistry,
  useSecureClients,
} from './helpers.js';

let r: TestRegistry;
/** conformance-secure.test.ts runs every test of this file again over HTTPS with credentials required. */
const secure = process.env.DEVPIVOT_CONFORMANCE_SECURE === '1';
test.before(async () => {
  r = await startTestRegistry({ secure });
  if (secure) useSecureClients(r);
});
test.after.always(async () => {
  await r?.close();
});

// ---------------------------------------------------------------- base

test('base: GET and HEAD /v2/ answer 200 with the API version header', async (t) => {
  const get = await fetch(`${r.url}/v2/`);
  t.is(get.status, 200);
  t.is(get.headers.get('docker-distribution-api-version'), 'registry/2.0');
  t.deepEqual(await get.json(), {});
  const head = await fetch(`${r.url}/v2/`, { method: 'HEAD' });
  t.is(head.status, 200);
});

test('base: unknown endpoints and methods get JSON errors', async (t) => {
  const unknown = await fetch(`${r.url}/v3/`);
  t.is(unknown.status, 404);
  t.deepEqual(await errorCodes(unknown), ['UNSUPPORTED']);
  const method = await fetch(`${r.url}/v2/some/repo/tags/list`, { method: 'POST' });
  t.is(method.status, 405);
  t.deepEqual(await errorCodes(method), ['UNSUPPORTED']);
});

// ---------------------------------------------------------------- pull

test('pull: manifest by tag and by digest, GET and HEAD, with digest, type and length headers', async (t) => {
  const image = makeImage([1000, 2000]);
  await pushImage(r.url, 'pull/basic', image, 'v1');
  for (const ref of ['v1', image.manifest.digest]) {
    const get = await fetch(`${r.url}/v2/pull/basic/manifests/${ref}`, { headers: { Accept: OCI_MANIFEST } });
    t.is(get.status, 200);
    t.is(get.headers.get('content-type'), OCI_MANIFEST);
    t.is(get.headers.get('docker-content-digest'), image.manifest.digest);
    t.is(Number(get.headers.get('content-length')), image.manifest.size);
    t.deepEqual(Buffer.from(await get.arrayBuffer()), image.manifest.bytes);
    const head = await fetch(`${r.url}/v2/pull/basic/manifests/${ref}`, { method: 'HEAD' });
    t.is(head.status, 200);
    t.is(head.headers.get('docker-content-digest'), image.manifest.digest);
    t.is(Number(head.headers.get('content-length')), image.manifest.size);
  }
});

test('pull: blobs by digest, GET and HEAD; absent ones are 404 BLOB_UNKNOWN', async (t) => {
  const image = makeImage([5000]);
  await pushImage(r.url, 'pull/blobs', image);
  const layer = image.layers[0]!;
  const get = await fetch(`${r.url}/v2/pull/blobs/blobs/${layer.digest}`);
  t.is(get.status, 200);
  t.is(get.headers.get('docker-content-digest'), layer.digest);
  t.is(digestOf(Buffer.from(await get.arrayBuffer())), layer.digest);
  const head = await fetch(`${r.url}/v2/pull/blobs/blobs/${layer.digest}`, { method: 'HEAD' });
  t.is(head.status, 200);
  t.is(Number(head.headers.get('content-length')), layer.size);
  const missing = await fetch(`${r.url}/v2/pull/blobs/blobs/${digestOf('nope')}`);
  t.is(missing.status, 404);
  t.deepEqual(await errorCodes(missing), ['BLOB_UNKNOWN']);
  // Held by the store but not linked to this repository: still unknown here.
  const other = await fetch(`${r.url}/v2/pull/other/blobs/${layer.digest}`);
  t.is(other.status, 404);
});

test('pull: unknown manifests are 404 (MANIFEST_UNKNOWN, or NAME_UNKNOWN for an unknown repository)', async (t) => {
  const image = makeImage([10]);
  await pushImage(r.url, 'pull/known', image);
  const tag = await fetch(`${r.url}/v2/pull/known/manifests/nope`);
  t.is(tag.status, 404);
  t.deepEqual(await errorCodes(tag), ['MANIFEST_UNKNOWN']);
  const digest = await fetch(`${r.url}/v2/pull/known/manifests/${digestOf('x')}`);
  t.is(digest.status, 404);
  t.deepEqual(await errorCodes(digest), ['MANIFEST_UNKNOWN']);
  const repo = await fetch(`${r.url}/v2/pull/never-pushed/manifests/latest`);
  t.is(repo.status, 404);
  t.deepEqual(await errorCodes(repo), ['NAME_UNKNOWN']);
});

test('pull: content negotiation for the four manifest types', async (t) => {
  const docker = makeImage([300], { mediaType: DOCKER_MANIFEST });
  await pushImage(r.url, 'pull/negotiate', docker, 'docker');
  const ok = await fetch(`${r.url}/v2/pull/negotiate/manifests/docker`, {
    headers: { Accept: `${OCI_MANIFEST}, ${DOCKER_MANIFEST};q=0.9` },
  });
  t.is(ok.status, 200);
  t.is(ok.headers.get('content-type'), DOCKER_MANIFEST);
  const wildcard = await fetch(`${r.url}/v2/pull/negotiate/manifests/docker`, { headers: { Accept: '*/*' } });
  t.is(wildcard.status, 200);
  const refused = await fetch(`${r.url}/v2/pull/negotiate/manifests/docker`, { headers: { Accept: OCI_MANIFEST } });
  t.is(refused.status, 404);
  t.deepEqual(await errorCodes(refused), ['MANIFEST_UNKNOWN']);

  const list = makeIndex([{ image: docker, arch: 'amd64' }], DOCKER_LIST);
  t.is((await pushManifest(r.url, 'pull/negotiate', 'list', list)).status, 201);
  const gotList = await fetch(`${r.url}/v2/pull/negotiate/manifests/list`, { headers: { Accept: DOCKER_LIST } });
  t.is(gotList.headers.get('content-type'), DOCKER_LIST);
  const oci = makeImage([300]);
  await pushImage(r.url, 'pull/negotiate', oci, 'oci');
  const index = makeIndex([{ image: oci, arch: 'amd64' }]);
  t.is((await pushManifest(r.url, 'pull/negotiate', 'index', index)).status, 201);
  const gotIndex = await fetch(`${r.url}/v2/pull/negotiate/manifests/index`, { headers: { Accept: OCI_INDEX } });
  t.is(gotIndex.status, 200);
  t.is(gotIndex.headers.get('content-type'), OCI_INDEX);
  t.is(gotIndex.headers.get('docker-content-digest'), index.digest);
});

test('pull: Range requests give 206 with Content-Range; suffix ranges; unsatisfiable is 416 (curl)', async (t) => {
  const bytes = randomBytes(10_000);
  const b = { digest: digestOf(bytes), size: bytes.length, bytes, mediaType: 'application/octet-stream' };
  t.is((await pushBlob(r.url, 'pull/range', b)).status, 201);
  const url = `${r.url}/v2/pull/range/blobs/${b.digest}`;
  const part = await curl(['-r', '100-199', url]);
  t.is(part.status, 206);
  t.is(part.headers['content-range'], 'bytes 100-199/10000');
  t.is(part.headers['content-length'], '100');
  const viaFetch = await fetch(url, { headers: { Range: 'bytes=9990-' } });
  t.is(viaFetch.status, 206);
  t.deepEqual(Buffer.from(await viaFetch.arrayBuffer()), bytes.subarray(9990));
  const suffix = await fetch(url, { headers: { Range: 'bytes=-10' } });
  t.is(suffix.status, 206);
  t.deepEqual(Buffer.from(await suffix.arrayBuffer()), bytes.subarray(9990));
  const bad = await curl(['-r', '20000-30000', url]);
  t.is(bad.status, 416);
  t.is(bad.headers['content-range'], 'bytes */10000');
  // The body is exactly what the headers announce.
  t.is(Number(bad.headers['content-length']), Buffer.byteLength(bad.body));
  t.is(bad.headers['content-type']?.split(';')[0], 'application/json');
  t.is(JSON.parse(bad.body).errors[0].code, 'SIZE_INVALID');
});

// ---------------------------------------------------------------- push

test('push: monolithic POST ?digest= gives 201 with Location and Docker-Content-Digest (curl)', async (t) => {
  const bytes = randomBytes(4096);
  const digest = digestOf(bytes);
  const { rm, writeFile } = await import('node:fs/promises');
  const file = `${r.storage}-mono.bin`;
  t.teardown(() => rm(file, { force: true }));
  await writeFile(file, bytes);
  const result = await curl([
    '-X',
    'POST',
    '-H',
    'Content-Type: application/octet-stream',
    '--data-binary',
    `@${file}`,
    `${r.url}/v2/push/mono/blobs/uploads/?digest=${digest}`,
  ]);
  t.is(result.status, 201);
  t.is(result.headers.location, `/v2/push/mono/blobs/${digest}`);
  t.is(result.headers['docker-content-digest'], digest);
  const get = await fetch(`${r.url}${result.headers.location}`);
  t.deepEqual(Buffer.from(await get.arrayBuffer()), bytes);
});

test('push: POST then PUT with the whole blob', async (t) => {
  const bytes = randomBytes(3000);
  const digest = digestOf(bytes);
  const post = await fetch(`${r.url}/v2/push/post-put/blobs/uploads/`, {
    method: 'POST',
    headers: { 'Content-Length': '0' },
  });
  t.is(post.status, 202);
  const location = post.headers.get('location')!;
  t.truthy(post.headers.get('docker-upload-uuid'));
  const put = await fetch(`${r.url}${location}?digest=${digest}`, {
    method: 'PUT',
    body: bytes,
    headers: { 'Content-Type': 'application/octet-stream' },
  });
  t.is(put.status, 201);
  t.is(put.headers.get('docker-content-digest'), digest);
  t.is((await fetch(`${r.url}/v2/push/post-put/blobs/${digest}`, { method: 'HEAD' })).status, 200);
});

test('push: chunked upload with ordering, status, out-of-order 416, and finalize', async (t) => {
  const bytes = randomBytes(30_000);
  const digest = digestOf(bytes);
  const post = await fetch(`${r.url}/v2/push/chunked/blobs/uploads/`, { method: 'POST' });
  t.is(post.status, 202);
  let location = post.headers.get('location')!;
  const patch = (from: number, to: number) =>
    fetch(`${r.url}${location}`, {
      method: 'PATCH',
      body: bytes.subarray(from, to),
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': `${from}-${to - 1}` },
    });
  const first = await patch(0, 10_000);
  t.is(first.status, 202);
  t.is(first.headers.get('range'), '0-9999');
  location = first.headers.get('location')!;
  const status = await fetch(`${r.url}${location}`);
  t.is(status.status, 204);
  t.is(status.headers.get('range'), '0-9999');
  const outOfOrder = await patch(20_000, 30_000);
  t.is(outOfOrder.status, 416);
  t.deepEqual(await errorCodes(outOfOrder), ['BLOB_UPLOAD_INVALID']);
  t.is(outOfOrder.headers.get('range'), '0-9999');
  const overlap = await patch(5000, 15_000);
  t.is(overlap.status, 416);
  await overlap.body?.cancel();
  t.is((await patch(10_000, 20_000)).status, 202);
  // A chunk without Content-Range is appended (streamed upload).
  const streamed = await fetch(`${r.url}${location}`, {
    method: 'PATCH',
    body: bytes.subarray(20_000),
    headers: { 'Content-Type': 'application/octet-stream' },
  });
  t.is(streamed.status, 202);
  t.is(streamed.headers.get('range'), '0-29999');
  const wrong = await fetch(`${r.url}${location}?digest=${digestOf('other')}`, { method: 'PUT' });
  t.is(wrong.status, 400);
  t.deepEqual(await errorCodes(wrong), ['DIGEST_INVALID']);
  const put = await fetch(`${r.url}${location}?digest=${digest}`, { method: 'PUT' });
  t.is(put.status, 201);
  t.is(put.headers.get('location'), `/v2/push/chunked/blobs/${digest}`);
  const got = await fetch(`${r.url}/v2/push/chunked/blobs/${digest}`);
  t.is(digestOf(Buffer.from(await got.arrayBuffer())), digest);
  // The session is gone once finalised.
  const after = await fetch(`${r.url}${location}`);
  t.is(after.status, 404);
  t.deepEqual(await errorCodes(after), ['BLOB_UPLOAD_UNKNOWN']);
});

test('push: the final chunk can come with the PUT (Content-Range), as the conformance suite sends it', async (t) => {
  const bytes = randomBytes(2000);
  const digest = digestOf(bytes);
  const post = await fetch(`${r.url}/v2/push/final-chunk/blobs/uploads/`, {
    method: 'POST',
    headers: { 'Content-Length': '0' },
  });
  const first = await fetch(`${r.url}${post.headers.get('location')}`, {
    method: 'PATCH',
    body: bytes.subarray(0, 1200),
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': '0-1199' },
  });
  t.is(first.status, 202);
  const put = await fetch(`${r.url}${first.headers.get('location')}?digest=${digest}`, {
    method: 'PUT',
    body: bytes.subarray(1200),
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': '1200-1999' },
  });
  t.is(put.status, 201);
  t.is(put.headers.get('docker-content-digest'), digest);
});

test('push: wrong and malformed digests are DIGEST_INVALID and store nothing', async (t) => {
  const bytes = randomBytes(1000);
  const wrong = await fetch(`${r.url}/v2/push/digests/blobs/uploads/?digest=${digestOf('something else')}`, {
    method: 'POST',
    body: bytes,
  });
  t.is(wrong.status, 400);
  t.deepEqual(await errorCodes(wrong), ['DIGEST_INVALID']);
  t.false(await r.registry.store.hasBlob(digestOf(bytes)));
  for (const bad of ['sha256:xyz', 'md5:abc', 'sha256:ABCDEF', 'nodigest', 'sha512:' + 'a'.repeat(128)]) {
    const response = await fetch(`${r.url}/v2/push/digests/blobs/uploads/?digest=${encodeURIComponent(bad)}`, {
      method: 'POST',
      body: bytes,
    });
    t.is(response.status, 400, bad);
    t.deepEqual(await errorCodes(response), ['DIGEST_INVALID'], bad);
  }
  const getBad = await fetch(`${r.url}/v2/push/digests/blobs/sha256:nothex`);
  t.is(getBad.status, 400);
  t.deepEqual(await errorCodes(getBad), ['DIGEST_INVALID']);
});

test('push: upload sessions can be cancelled; unknown sessions are BLOB_UPLOAD_UNKNOWN', async (t) => {
  const post = await fetch(`${r.url}/v2/push/cancel/blobs/uploads/`, { method: 'POST' });
  const location = post.headers.get('location')!;
  const del = await fetch(`${r.url}${location}`, { method: 'DELETE' });
  t.is(del.status, 204);
  const status = await fetch(`${r.url}${location}`);
  t.is(status.status, 404);
  t.deepEqual(await errorCodes(status), ['BLOB_UPLOAD_UNKNOWN']);
  const bogus = await fetch(`${r.url}/v2/push/cancel/blobs/uploads/not-a-session`, {
    method: 'PATCH',
    body: 'x',
  });
  t.is(bogus.status, 404);
  t.deepEqual(await errorCodes(bogus), ['BLOB_UPLOAD_UNKNOWN']);
  // A session belongs to its repository.
  const other = await fetch(`${r.url}/v2/push/cancel/blobs/uploads/`, { method: 'POST' });
  const id = other.headers.get('docker-upload-uuid')!;
  const foreign = await fetch(`${r.url}/v2/push/elsewhere/blobs/uploads/${id}`);
  t.is(foreign.status, 404);
});

test('push: cross-repository mount gives 201, or a 202 session when the blob is not there', async (t) => {
  const image = makeImage([700]);
  await pushImage(r.url, 'push/mount-src', image);
  const layer = image.layers[0]!;
  const mounted = await fetch(`${r.url}/v2/push/mount-dst/blobs/uploads/?mount=${layer.digest}&from=push/mount-src`, {
    method: 'POST',
  });
  t.is(mounted.status, 201);
  t.is(mounted.headers.get('location'), `/v2/push/mount-dst/blobs/${layer.digest}`);
  t.is((await fetch(`${r.url}/v2/push/mount-dst/blobs/${layer.digest}`, { method: 'HEAD' })).status, 200);
  const absent = await fetch(
    `${r.url}/v2/push/mount-dst/blobs/uploads/?mount=${digestOf('absent')}&from=push/mount-src`,
    {
      method: 'POST',
    },
  );
  t.is(absent.status, 202);
  t.truthy(absent.headers.get('location'));
});

test('push: manifests are validated (JSON, media type, blobs, children, digest, size)', async (t) => {
  const image = makeImage([100]);
  const repo = 'push/manifests';
  const missing = await pushManifest(r.url, repo, 'v1', image.manifest);
  t.is(missing.status, 400);
  t.deepEqual(await errorCodes(missing), ['MANIFEST_BLOB_UNKNOWN']);
  await pushImage(r.url, repo, image, 'v1');

  const put = (ref: string, body: string | Buffer, type = OCI_MANIFEST) =>
    fetch(`${r.url}/v2/${repo}/manifests/${ref}`, { method: 'PUT', body, headers: { 'Content-Type': type } });
  const malformed = await put('bad', '{"schemaVersion": 2,');
  t.is(malformed.status, 400);
  t.deepEqual(await errorCodes(malformed), ['MANIFEST_INVALID']);
  const notObject = await put('bad', '[]');
  t.deepEqual(await errorCodes(notObject), ['MANIFEST_INVALID']);
  const schema1 = await put('bad', JSON.stringify({ schemaVersion: 1, name: 'x' }));
  t.deepEqual(await errorCodes(schema1), ['MANIFEST_INVALID']);
  const mismatch = await put('bad', image.manifest.bytes, DOCKER_MANIFEST);
  t.deepEqual(await errorCodes(mismatch), ['MANIFEST_INVALID']);
  const noLayers = await put('bad', JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: {} }));
  t.deepEqual(await errorCodes(noLayers), ['MANIFEST_INVALID']);
  const byWrongDigest = await put(digestOf('x'), image.manifest.bytes);
  t.is(byWrongDigest.status, 400);
  t.deepEqual(await errorCodes(byWrongDigest), ['DIGEST_INVALID']);
  const byDigest = await put(image.manifest.digest, image.manifest.bytes);
  t.is(byDigest.status, 201);
  t.is(byDigest.headers.get('docker-content-digest'), image.manifest.digest);
  t.is(byDigest.headers.get('location'), `/v2/${repo}/manifests/${image.manifest.digest}`);
  const badTag = await put('-bad-tag', image.manifest.bytes);
  t.deepEqual(await errorCodes(badTag), ['MANIFEST_INVALID']);
  const orphanIndex = makeIndex([{ image: makeImage([5]), arch: 'amd64' }]);
  const index = await pushManifest(r.url, repo, 'idx', orphanIndex);
  t.is(index.status, 400);
  t.deepEqual(await errorCodes(index), ['MANIFEST_BLOB_UNKNOWN']);
  const huge = await put('huge', Buffer.alloc(4 * 1024 * 1024 + 1, 32));
  t.is(huge.status, 413);
  t.deepEqual(await errorCodes(huge), ['SIZE_INVALID']);
});

test('push: a manifest with a subject gets OCI-Subject, even before the subject exists', async (t) => {
  const repo = 'push/subject';
  const subject = makeImage([10]);
  const artifact = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: 'application/vnd.example.sig',
    config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: digestOf('{}'), size: 2 },
    layers: [{ mediaType: 'application/vnd.oci.empty.v1+json', digest: digestOf('{}'), size: 2 }],
    subject: { mediaType: OCI_MANIFEST, digest: subject.manifest.digest, size: subject.manifest.size },
  };
  const empty = Buffer.from('{}');
  t.is((await pushBlob(r.url, repo, { digest: digestOf(empty), size: 2, bytes: empty, mediaType: '' })).status, 201);
  const bytes = Buffer.from(JSON.stringify(artifact));
  const put = await pushManifest(r.url, repo, digestOf(bytes), {
    digest: digestOf(bytes),
    size: bytes.length,
    bytes,
    mediaType: OCI_MANIFEST,
  });
  t.is(put.status, 201);
  t.is(put.headers.get('oci-subject'), subject.manifest.digest);
});

test('push: an index with a subject also gets OCI-Subject and is listed as a referrer', async (t) => {
  const repo = 'push/index-subject';
  const child = makeImage([10]);
  await pushImage(r.url, repo, child, 'child');
  const subject = digestOf('a subject that is not pushed');
  const bytes = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_INDEX,
      artifactType: 'application/vnd.example.bundle',
      manifests: [{ mediaType: OCI_MANIFEST, digest: child.manifest.digest, size: child.manifest.size }],
      subject: { mediaType: OCI_MANIFEST, digest: subject, size: 123 },
    }),
  );
  const put = await pushManifest(r.url, repo, digestOf(bytes), {
    bytes,
    digest: digestOf(bytes),
    size: bytes.length,
    mediaType: OCI_INDEX,
  });
  t.is(put.status, 201);
  t.is(put.headers.get('oci-subject'), subject);
  const list = (await (await fetch(`${r.url}/v2/${repo}/referrers/${subject}`)).json()) as {
    manifests: { digest: string; mediaType: string; artifactType: string }[];
  };
  t.deepEqual(list.manifests, [
    {
      mediaType: OCI_INDEX,
      digest: digestOf(bytes),
      size: bytes.length,
      artifactType: 'application/vnd.example.bundle',
    },
  ]);
});

// ---------------------------------------------------------------- content discovery

test('discovery: tags list in lexical order with n/last pagination and Link (curl)', async (t) => {
  const repo = 'discover/tags';
  const image = makeImage([10]);
  await pushImage(r.url, repo, image, 'b');
  for (const tag of ['a', 'C', 'd', 'E1', 'e0'])
    t.is((await pushManifest(r.url, repo, tag, image.manifest)).status, 201);
  const all = await curl([`${r.url}/v2/${repo}/tags/list`]);
  t.is(all.status, 200);
  t.deepEqual(JSON.parse(all.body), { name: repo, tags: ['a', 'b', 'C', 'd', 'e0', 'E1'] });
  const first = await curl([`${r.url}/v2/${repo}/tags/list?n=2`]);
  t.deepEqual(JSON.parse(first.body).tags, ['a', 'b']);
  t.is(first.headers.link, `</v2/${repo}/tags/list?n=2&last=b>; rel="next"`);
  const next = await fetch(`${r.url}/v2/${repo}/tags/list?n=2&last=b`);
  t.deepEqual(((await next.json()) as { tags: string[] }).tags, ['C', 'd']);
  const tail = await fetch(`${r.url}/v2/${repo}/tags/list?n=10&last=d`);
  t.deepEqual(((await tail.json()) as { tags: string[] }).tags, ['e0', 'E1']);
  t.is(tail.headers.get('link'), null);
  const lastOnly = await fetch(`${r.url}/v2/${repo}/tags/list?last=d`);
  t.deepEqual(((await lastOnly.json()) as { tags: string[] }).tags, ['e0', 'E1']);
  const zero = await fetch(`${r.url}/v2/${repo}/tags/list?n=0`);
  t.deepEqual(((await zero.json()) as { tags: string[] }).tags, []);
  t.is(zero.headers.get('link'), null);
  const unknown = await fetch(`${r.url}/v2/discover/none/tags/list`);
  t.is(unknown.status, 404);
  t.deepEqual(await errorCodes(unknown), ['NAME_UNKNOWN']);
});

test('discovery: referrers API lists subjects, filters by artifactType, never 404s', async (t) => {
  const repo = 'discover/referrers';
  const subject = makeImage([10]);
  await pushImage(r.url, repo, subject);
  const empty = Buffer.from('{}');
  await pushBlob(r.url, repo, { digest: digestOf(empty), size: 2, bytes: empty, mediaType: '' });
  const artifact = (artifactType: string, annotation: string) => {
    const bytes = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        artifactType,
        config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: digestOf(empty), size: 2 },
        layers: [],
        subject: { mediaType: OCI_MANIFEST, digest: subject.manifest.digest, size: subject.manifest.size },
        annotations: { 'org.example.note': annotation },
      }),
    );
    return { bytes, digest: digestOf(bytes), size: bytes.length, mediaType: OCI_MANIFEST };
  };
  const sig = artifact('application/vnd.example.sig', 's');
  const sbom = artifact('application/vnd.example.sbom', 'b');
  for (const a of [sig, sbom]) t.is((await pushManifest(r.url, repo, a.digest, a)).status, 201);
  const all = await fetch(`${r.url}/v2/${repo}/referrers/${subject.manifest.digest}`);
  t.is(all.status, 200);
  t.is(all.headers.get('content-type'), OCI_INDEX);
  const index = (await all.json()) as {
    mediaType: string;
    manifests: { digest: string; artifactType: string; annotations: Record<string, string>; size: number }[];
  };
  t.is(index.mediaType, OCI_INDEX);
  t.deepEqual(index.manifests.map((m) => m.digest).sort(), [sig.digest, sbom.digest].sort());
  const sigEntry = index.manifests.find((m) => m.digest === sig.digest)!;
  t.is(sigEntry.artifactType, 'application/vnd.example.sig');
  t.is(sigEntry.size, sig.size);
  t.deepEqual(sigEntry.annotations, { 'org.example.note': 's' });
  const filtered = await fetch(
    `${r.url}/v2/${repo}/referrers/${subject.manifest.digest}?artifactType=${encodeURIComponent('application/vnd.example.sbom')}`,
  );
  t.is(filtered.headers.get('oci-filters-applied'), 'artifactType');
  t.deepEqual(
    ((await filtered.json()) as { manifests: { digest: string }[] }).manifests.map((m) => m.digest),
    [sbom.digest],
  );
  const none = await fetch(`${r.url}/v2/${repo}/referrers/${digestOf('nothing')}`);
  t.is(none.status, 200);
  t.deepEqual(((await none.json()) as { manifests: unknown[] }).manifests, []);
  const bad = await fetch(`${r.url}/v2/${repo}/referrers/sha256:zzz`);
  t.is(bad.status, 400);
  t.deepEqual(await errorCodes(bad), ['DIGEST_INVALID']);
  // Deleting a referrer removes it from the list.
  t.is((await fetch(`${r.url}/v2/${repo}/manifests/${sig.digest}`, { method: 'DELETE' })).status, 202);
  const after = await fetch(`${r.url}/v2/${repo}/referrers/${subject.manifest.digest}`);
  t.deepEqual(
    ((await after.json()) as { manifests: { digest: string }[] }).manifests.map((m) => m.digest),
    [sbom.digest],
  );
});

test('discovery: _catalog lists repositories with pagination', async (t) => {
  const image = makeImage([10]);
  for (const repo of ['catalog/zz', 'catalog/aa', 'catalog/mm']) await pushImage(r.url, repo, image);
  const body = (await (await fetch(`${r.url}/v2/_catalog`)).json()) as { repositories: string[] };
  const ours = body.repositories.filter((name) => name.startsWith('catalog/'));
  t.deepEqual(ours, ['catalog/aa', 'catalog/mm', 'catalog/zz']);
  const page = await fetch(`${r.url}/v2/_catalog?n=1&last=catalog/aa`);
  t.deepEqual(((await page.json()) as { repositories: string[] }).repositories, ['catalog/mm']);
  t.is(page.headers.get('link'), '</v2/_catalog?n=1&last=catalog%2Fmm>; rel="next"');
});

// ---------------------------------------------------------------- content management

test('management: delete a tag, then the manifest, then a blob', async (t) => {
  const repo = 'manage/delete';
  const image = makeImage([100]);
  await pushImage(r.url, repo, image, 'one');
  t.is((await pushManifest(r.url, repo, 'two', image.manifest)).status, 201);
  const delTag = await curl(['-X', 'DELETE', `${r.url}/v2/${repo}/manifests/one`]);
  t.is(delTag.status, 202);
  t.is((await fetch(`${r.url}/v2/${repo}/manifests/one`)).status, 404);
  t.is((await fetch(`${r.url}/v2/${repo}/manifests/two`)).status, 200);
  const tags = (await (await fetch(`${r.url}/v2/${repo}/tags/list`)).json()) as { tags: string[] };
  t.deepEqual(tags.tags, ['two'], 'deleted tags are not listed');
  const delManifest = await fetch(`${r.url}/v2/${repo}/manifests/${image.manifest.digest}`, { method: 'DELETE' });
  t.is(delManifest.status, 202);
  t.is((await fetch(`${r.url}/v2/${repo}/manifests/${image.manifest.digest}`)).status, 404);
  t.is((await fetch(`${r.url}/v2/${repo}/manifests/two`)).status, 404, 'tags pointing at a deleted manifest go too');
  const again = await fetch(`${r.url}/v2/${repo}/manifests/${image.manifest.digest}`, { method: 'DELETE' });
  t.is(again.status, 404);
  t.deepEqual(await errorCodes(again), ['MANIFEST_UNKNOWN']);
  const layer = image.layers[0]!.digest;
  const delBlob = await curl(['-X', 'DELETE', `${r.url}/v2/${repo}/blobs/${layer}`]);
  t.is(delBlob.status, 202);
  const gone = await fetch(`${r.url}/v2/${repo}/blobs/${layer}`);
  t.is(gone.status, 404);
  t.deepEqual(await errorCodes(gone), ['BLOB_UNKNOWN']);
  const unknownRepo = await fetch(`${r.url}/v2/manage/none/manifests/latest`, { method: 'DELETE' });
  t.is(unknownRepo.status, 404);
  t.deepEqual(await errorCodes(unknownRepo), ['NAME_UNKNOWN']);
});

// ---------------------------------------------------------------- names and bad inputs

test('names: invalid repository names are NAME_INVALID, including encoded traversal (curl --path-as-is)', async (t) => {
  for (const name of [
    'UPPER',
    'a//b',
    '../x',
    '%2e%2e/x',
    'a/%2e%2e/b',
    '-a',
    'a-',
    'a/',
    'a..b',
    'a%2Fb',
    'x'.repeat(256),
  ]) {
    const result = await curl(['--path-as-is', `${r.url}/v2/${name}/tags/list`]);
    t.is(result.status, 400, name);
    t.is(JSON.parse(result.body).errors[0].code, 'NAME_INVALID', name);
  }
  for (const name of ['a', 'a/b', 'a.b/c_d/e__f/g-h/i--j', '0', 'x'.repeat(255)]) {
    const result = await fetch(`${r.url}/v2/${name}/tags/list`);
    t.is(result.status, 404, name); // valid but unknown
    await result.body?.cancel();
  }
});

test('events: registry.request per response and blob.progress ending at the blob size', async (t) => {
  const image = makeImage([300_000]);
  await pushImage(r.url, 'events/repo', image);
  const layer = image.layers[0]!;
  const response = await fetch(`${r.url}/v2/events/repo/blobs/${layer.digest}`);
  await response.arrayBuffer();
  await new Promise((resolve) => setTimeout(resolve, 50));
  const progress = r.events.filter((e) => e.kind === 'blob.progress' && e.digest === layer.digest);
  t.true(progress.length >= 1);
  const last = progress.at(-1) as { sent: number; total: number; repository: string };
  t.is(last.sent, layer.size);
  t.is(last.total, layer.size);
  t.is(last.repository, 'events/repo');
  const request = r.events.find(
    (e) => e.kind === 'registry.request' && e.path === `/v2/events/repo/blobs/${layer.digest}`,
  ) as { status: number; bytes: number } | undefined;
  t.is(request?.status, 200);
  t.is(request?.bytes, layer.size);
});

test('digest helper: sha256 of test data matches node crypto', (t) => {
  t.is(digestOf('abc'), `sha256:${createHash('sha256').update('abc').digest('hex')}`);
});
