/**
 * Per-node ports (docs/ARCHITECTURE.md "Per-node ports"): the registry also listens on one loopback port per node,
 * and every request on a node's port is that node's in `registry.request` and `blob.progress`. Real clients:
 * skopeo pulls the image through one node's port while curl fetches a layer through the other's, at the same time.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import { curl, makeImage, pushImage, run, startTestRegistry, tempDir } from './helpers.js';

const progress = (events: Stamped[]) =>
  events.filter((e): e is Stamped<EventOf<'blob.progress'>> => e.kind === 'blob.progress');
const requests = (events: Stamped[]) =>
  events.filter((e): e is Stamped<EventOf<'registry.request'>> => e.kind === 'registry.request');

/** skopeo copies nodes/os:v1 through a port into dir:DIR. */
const skopeoCopy = (port: number, dir: string) =>
  run(
    'skopeo',
    ['--insecure-policy', 'copy', '--src-tls-verify=false', `docker://127.0.0.1:${port}/nodes/os:v1`, `dir:${dir}`],
    120_000,
  );

test("node ports: skopeo on node-a's port and curl on node-b's are told apart; the main port names no node", async (t) => {
  const r = await startTestRegistry();
  const work = await tempDir('devpivot-node-ports-');
  try {
    const image = makeImage([300_000, 1_200_000]);
    await pushImage(r.url, 'nodes/os', image, 'v1');
    const pushed = r.events.length;
    const portA = await r.registry.addNodePort('node-a');
    const portB = await r.registry.addNodePort('node-b');
    t.not(portA, r.registry.port);
    t.not(portB, r.registry.port);
    t.not(portA, portB);
    t.is(await r.registry.addNodePort('node-a'), portA, 'a node keeps its port');
    t.deepEqual(
      [...r.registry.nodePorts],
      [
        ['node-a', portA],
        ['node-b', portB],
      ],
    );
    t.true(
      requests(r.events.slice(0, pushed)).every((e) => e.node === undefined),
      'pushes on the main port: no node',
    );

    const big = image.layers[1]!;
    const [skopeo, fetched] = await Promise.all([
      skopeoCopy(portA, join(work, 'a')),
      run('curl', ['-sf', '-o', join(work, 'b.layer'), `http://127.0.0.1:${portB}/v2/nodes/os/blobs/${big.digest}`]),
    ]);
    t.is(skopeo.code, 0, skopeo.stderr);
    t.is(fetched.code, 0, fetched.stderr);
    // Main port, after the node ports: still no node.
    t.is((await curl([`${r.url}/v2/nodes/os/blobs/${image.layers[0]!.digest}`])).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 100));

    const pulls = requests(r.events.slice(pushed)).filter((e) => e.method === 'GET');
    const byNode = (node: string | undefined) => pulls.filter((e) => e.node === node).map((e) => e.path);
    // skopeo asked node-a's port for the manifest, the config and both layers; curl node-b's for one layer.
    t.true(byNode('node-a').includes('/v2/nodes/os/manifests/v1'));
    for (const blob of [image.config, ...image.layers])
      t.true(byNode('node-a').includes(`/v2/nodes/os/blobs/${blob.digest}`), blob.digest);
    t.deepEqual(byNode('node-b'), [`/v2/nodes/os/blobs/${big.digest}`]);
    t.deepEqual(byNode(undefined), [`/v2/nodes/os/blobs/${image.layers[0]!.digest}`]);

    // blob.progress: each node's finished series add up to what it pulled.
    const finished = progress(r.events.slice(pushed)).filter((e) => e.sent === e.total);
    const bytes = (node: string | undefined) =>
      finished.filter((e) => e.node === node).reduce((sum, e) => sum + e.total, 0);
    t.is(bytes('node-a'), image.config.bytes.length + image.layers.reduce((sum, l) => sum + l.size, 0));
    t.is(bytes('node-b'), big.size);
    t.is(bytes(undefined), image.layers[0]!.size);
    t.true(progress(r.events).every((e) => e.node === undefined || e.node === 'node-a' || e.node === 'node-b'));
  } finally {
    await r.close();
    await rm(work, { recursive: true, force: true });
  }
});

test('node ports go down and come up with the registry (fault: down / up)', async (t) => {
  const r = await startTestRegistry();
  try {
    const port = await r.registry.addNodePort('node-a');
    t.is((await fetch(`http://127.0.0.1:${port}/v2/`)).status, 200);
    await r.registry.stop();
    await t.throwsAsync(fetch(`http://127.0.0.1:${port}/v2/`));
    await r.registry.start();
    t.is(r.registry.nodePorts.get('node-a'), port);
    const response = await fetch(`http://127.0.0.1:${port}/v2/`);
    t.is(response.status, 200);
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.like(requests(r.events).at(-1), { path: '/v2/', node: 'node-a' });
  } finally {
    await r.close();
  }
});

test("corrupt-blob for one node (fault: { registry: corrupt-blob, node }): skopeo on that node's port fails the digest check, on the other's it copies the image", async (t) => {
  const r = await startTestRegistry();
  const work = await tempDir('devpivot-node-corrupt-');
  try {
    const image = makeImage([300_000]);
    await pushImage(r.url, 'nodes/os', image, 'v1');
    const portA = await r.registry.addNodePort('node-a');
    const portB = await r.registry.addNodePort('node-b');
    r.registry.faults.corruptBlobsFor = new Set(['node-a']);
    const [a, b] = await Promise.all([skopeoCopy(portA, join(work, 'a')), skopeoCopy(portB, join(work, 'b'))]);
    t.not(a.code, 0, 'the corrupted node fails');
    t.regex(a.stderr, /[Dd]igest did not match/, a.stderr);
    t.is(b.code, 0, b.stderr);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const layer = image.layers[0]!.digest;
    const corrupted = requests(r.events).filter((e) => e.corrupted === true);
    t.true(corrupted.length > 0);
    t.true(corrupted.every((e) => e.node === 'node-a' && e.path.endsWith(layer)));
  } finally {
    await r.close();
    await rm(work, { recursive: true, force: true });
  }
});
