/**
 * Pull-through against a real upstream: Debian's docker-registry (distribution) on 127.0.0.1 behind a counting
 * proxy, real skopeo and curl as the clients of the embedded registry. Each blob and manifest goes upstream once,
 * however many clients ask at the same time; a corrupt upstream blob is never stored; a dead upstream is a 503.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';
import { freeLoopbackPort } from '../../src/core/free-port.js';
import { mirrorDropIn } from '../../src/ignition/mirror-fragment.js';
import { upstreamClient } from '../../src/oscontainer/index.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/index.js';
import { type DockerRegistry, startDockerRegistry } from '../oscontainer/docker-registry.js';
import { curl, type Image, makeImage, run, tempDir, writeOciLayout } from './helpers.js';
import { type CountingProxy, startCountingProxy } from './upstream.js';

const NS = 'openshift-release-dev';
let work: string;
let upstream: DockerRegistry;
let proxy: CountingProxy;
let embedded: RunningRegistry;
const images = new Map<string, Image>();
const events: Stamped[] = [];
/** The `registry.upstream` events for one digest, as `outcome bytes`. */
const fetches = (digest: string) =>
  events.flatMap((e) => (e.kind === 'registry.upstream' && e.digest === digest ? [`${e.outcome} ${e.bytes}`] : []));

async function skopeo(...args: string[]) {
  return run('skopeo', ['--insecure-policy', ...args], 120_000);
}

/** Put an image into the upstream (directly, not through the proxy) with real skopeo. */
async function pushUpstream(name: string, layerSizes: number[]): Promise<Image> {
  const image = makeImage(layerSizes);
  const layout = join(work, `layout-${name}`);
  await writeOciLayout(layout, image.manifest, [image.config, ...image.layers]);
  const result = await skopeo(
    'copy',
    '--preserve-digests',
    '--dest-tls-verify=false',
    `oci:${layout}:latest`,
    `docker://${upstream.hostPort}/${NS}/${name}:latest`,
  );
  if (result.code !== 0) throw new Error(`skopeo push: ${result.stderr}`);
  images.set(name, image);
  return image;
}

const blobPath = (name: string, digest: string) => `/v2/${NS}/${name}/blobs/${digest}`;
const manifestPath = (name: string, digest: string) => `/v2/${NS}/${name}/manifests/${digest}`;
const sha256 = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

test.before(async () => {
  work = await tempDir('devpivot-pull-through-');
  upstream = await startDockerRegistry();
  proxy = await startCountingProxy(`http://${upstream.hostPort}`);
  // No auth file of the user's: the upstream is anonymous, and the lookup must not find real credentials.
  const env = { HOME: work, REGISTRY_AUTH_FILE: join(work, 'auth.json') };
  const bus = new EventBus();
  bus.subscribe((event) => events.push(event));
  embedded = await startRegistry({
    storage: join(work, 'embedded'),
    bus,
    pullThrough: {
      upstream: upstreamClient(proxy.url, { env }),
      covers: (repository) => repository.startsWith(`${NS}/`),
    },
  });
  await pushUpstream('os', [150_000, 3_000_000]);
  await pushUpstream('other', [100_000]);
  await pushUpstream('corrupt', [400_000]);
});

test.after.always(async () => {
  await embedded?.stop();
  await proxy?.close();
  await upstream?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

test.serial(
  'five concurrent curl clients of one blob share one upstream fetch, then it is served from the store',
  async (t) => {
    const layer = images.get('os')!.layers[1]!;
    proxy.throttleMs = 15; // ~46 chunks of 64 KiB: the transfer lasts long enough for every client to join it
    const outputs = [0, 1, 2, 3, 4].map((i) => join(work, `curl-${i}`));
    const results = await Promise.all(
      outputs.map((out) => run('curl', ['-sS', '-f', '-o', out, `${embedded.url}${blobPath('os', layer.digest)}`])),
    );
    proxy.throttleMs = 0;
    for (const [i, result] of results.entries()) t.is(result.code, 0, `client ${i}: ${result.stderr}`);
    for (const out of outputs) t.is(sha256(await readFile(out)), layer.digest);
    t.is(proxy.count('GET', blobPath('os', layer.digest)), 1, proxy.requests.join('\n'));
    t.is(embedded.listener.pullThrough?.stats.blobFetches, 1);
    t.deepEqual(fetches(layer.digest), [`stored ${layer.size}`], 'one registry.upstream event for the shared fetch');
    t.true(await embedded.store.hasBlob(layer.digest));
    // Each client's response reports progress while it streams from the upstream: one series per client (by its
    // address), increasing, ending once with the whole blob.
    const series = new Map<string, number[]>();
    for (const e of events)
      if (e.kind === 'blob.progress' && e.digest === layer.digest)
        series.set(e.client, [...(series.get(e.client) ?? []), e.sent]);
    t.is(series.size, 5, 'a series per client');
    for (const sent of series.values()) {
      t.deepEqual(
        sent,
        [...sent].sort((a, b) => a - b),
        'increasing',
      );
      t.is(sent.at(-1), layer.size);
      t.is(sent.filter((n) => n === layer.size).length, 1, 'exactly one final event');
      t.true(sent.length >= 2, `progress while the upstream was slow: ${sent.join(' ')}`);
    }
    const again = await run('curl', ['-sS', '-f', '-o', outputs[0]!, `${embedded.url}${blobPath('os', layer.digest)}`]);
    t.is(again.code, 0);
    t.is(proxy.count('GET', blobPath('os', layer.digest)), 1, 'served from the store the second time');
  },
);

test.serial('concurrent skopeo copies by digest: the manifest and each blob go upstream once', async (t) => {
  const image = images.get('os')!;
  const ref = `docker://${embedded.address}/${NS}/os@${image.manifest.digest}`;
  const dirs = [0, 1, 2].map((i) => join(work, `copy-${i}`));
  const results = await Promise.all(dirs.map((dir) => skopeo('copy', '--src-tls-verify=false', ref, `dir:${dir}`)));
  for (const [i, result] of results.entries()) t.is(result.code, 0, `copy ${i}: ${result.stderr}`);
  for (const dir of dirs) {
    t.deepEqual(
      await readFile(join(dir, 'manifest.json')),
      image.manifest.bytes,
      'the manifest bytes as upstream has them',
    );
    // Compared by hash: ava's deepEqual of megabyte buffers takes seconds.
    for (const blob of [image.config, ...image.layers])
      t.is(sha256(await readFile(join(dir, blob.digest.slice(7)))), blob.digest);
  }
  t.is(proxy.count('GET', manifestPath('os', image.manifest.digest)), 1, proxy.requests.join('\n'));
  t.deepEqual(fetches(image.manifest.digest), [`stored ${image.manifest.size}`]);
  for (const blob of [image.config, ...image.layers])
    t.is(proxy.count('GET', blobPath('os', blob.digest)), 1, blob.digest);
  const before = proxy.requests.length;
  const later = await skopeo('copy', '--src-tls-verify=false', ref, `dir:${join(work, 'copy-later')}`);
  t.is(later.code, 0, later.stderr);
  t.deepEqual(proxy.requests.slice(before), [], 'a later copy is served from the store alone');
});

test.serial(
  "the guest's view: the mirror drop-in sends an upstream-named digest pull to the embedded registry",
  async (t) => {
    const image = images.get('other')!;
    // The "upstream name" is a closed loopback port: anything not sent to the mirror would fail, and stay on loopback.
    const prefix = `127.0.0.1:1/${NS}`;
    const conf = join(work, 'registries.conf');
    await writeFile(conf, mirrorDropIn([{ prefix, path: NS }], embedded.address, true));
    const out = join(work, 'mirrored');
    const result = await skopeo(
      '--registries-conf',
      conf,
      'copy',
      `docker://${prefix}/other@${image.manifest.digest}`,
      `dir:${out}`,
    );
    t.is(result.code, 0, result.stderr);
    t.deepEqual(await readFile(join(out, 'manifest.json')), image.manifest.bytes);
    t.is(proxy.count('GET', manifestPath('other', image.manifest.digest)), 1);
    for (const blob of [image.config, ...image.layers]) t.is(proxy.count('GET', blobPath('other', blob.digest)), 1);
    // By tag, the mirror is not used (mirror-by-digest-only): the pull goes to the closed upstream port and fails.
    const byTag = await skopeo('--registries-conf', conf, 'inspect', '--raw', `docker://${prefix}/other:latest`);
    t.not(byTag.code, 0);
    t.is(proxy.count('GET', `/v2/${NS}/other/manifests/latest`), 0);
  },
);

test.serial('a blob that does not match its digest upstream is not stored and the client transfer fails', async (t) => {
  const layer = images.get('corrupt')!.layers[0]!;
  const path = blobPath('corrupt', layer.digest);
  proxy.corrupt.add(path);
  const out = join(work, 'corrupt');
  const bad = await run('curl', ['-sS', '-f', '-o', out, `${embedded.url}${path}`]);
  t.not(bad.code, 0, 'the client connection is aborted');
  t.true((await readFile(out).catch(() => Buffer.alloc(0))).length < layer.size, 'never the whole (wrong) blob');
  t.false(await embedded.store.hasBlob(layer.digest));
  t.deepEqual(await readdir(embedded.store.layout.processTemp()), [], 'the partial copy is deleted');
  proxy.corrupt.delete(path);
  const good = await run('curl', ['-sS', '-f', '-o', out, `${embedded.url}${path}`]);
  t.is(good.code, 0, good.stderr);
  t.is(sha256(await readFile(out)), layer.digest);
  t.is(proxy.count('GET', path), 2, 'fetched again after the bad copy was discarded');
  t.deepEqual(fetches(layer.digest), [`failed ${layer.size}`, `stored ${layer.size}`]);
  t.true(await embedded.store.hasBlob(layer.digest));
});

test.serial(
  'a manifest that does not match its digest upstream is a 502 DIGEST_INVALID and is not stored',
  async (t) => {
    const image = images.get('corrupt')!;
    const path = manifestPath('corrupt', image.manifest.digest);
    proxy.corrupt.add(path);
    const bad = await curl([`${embedded.url}${path}`]);
    proxy.corrupt.delete(path);
    t.is(bad.status, 502);
    t.regex(bad.body, /DIGEST_INVALID/);
    t.is(await embedded.store.getManifest(`${NS}/corrupt`, image.manifest.digest), undefined);
    const good = await curl([`${embedded.url}${path}`]);
    t.is(good.status, 200);
    t.is(good.headers['docker-content-digest'], image.manifest.digest);
    t.deepEqual(
      fetches(image.manifest.digest).map((f) => f.split(' ')[0]),
      ['failed', 'stored'],
    );
  },
);

test.serial('tags, other repositories and HEAD: nothing is stored that was not asked for by digest', async (t) => {
  const image = images.get('other')!;
  const before = proxy.requests.length;
  const tag = await curl([`${embedded.url}/v2/${NS}/other/manifests/latest`]);
  t.is(tag.status, 404);
  const uncovered = await curl([`${embedded.url}/v2/devpivot/other/blobs/${image.config.digest}`]);
  t.is(uncovered.status, 404);
  t.regex(uncovered.body, /BLOB_UNKNOWN/);
  t.deepEqual(proxy.requests.slice(before), [], 'neither asked the upstream');
  const missing = makeImage([1000]).layers[0]!.digest;
  const head = await curl(['-I', `${embedded.url}/v2/${NS}/other/blobs/${missing}`]);
  t.is(head.status, 404);
  t.is(proxy.count('HEAD', blobPath('other', missing)), 1);
});

test('upstream down: the client gets a 503 UNAVAILABLE naming the upstream', async (t) => {
  const dead = `http://127.0.0.1:${await freeLoopbackPort()}`;
  const registry = await startRegistry({
    storage: join(work, 'dead-upstream'),
    pullThrough: {
      upstream: upstreamClient(dead, { env: { HOME: work, REGISTRY_AUTH_FILE: join(work, 'auth.json') } }),
      covers: () => true,
    },
  });
  t.teardown(() => registry.stop());
  const digest = makeImage([1000]).layers[0]!.digest;
  const response = await curl([`${registry.url}/v2/${NS}/os/blobs/${digest}`]);
  t.is(response.status, 503);
  const body = JSON.parse(response.body) as { errors: { code: string; message: string }[] };
  t.is(body.errors[0]?.code, 'UNAVAILABLE');
  t.true(body.errors[0]?.message.includes(dead), body.errors[0]?.message);
  const copy = await skopeo(
    'inspect',
    '--raw',
    '--tls-verify=false',
    `docker://${registry.address}/${NS}/os@${digest}`,
  );
  t.not(copy.code, 0);
  t.regex(copy.stderr, /503 Service Unavailable/);
});
