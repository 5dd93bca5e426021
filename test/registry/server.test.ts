/** The server wrapper, fault injection, gc, upload expiry and the store API used without HTTP. */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { collectGarbage } from '../../src/registry/gc.js';
import { RegistryStore } from '../../src/registry/store.js';
import { runCli } from '../helpers/cli.js';
import { digestOf, errorCodes, makeImage, pushImage, pushManifest, startTestRegistry, tempDir } from './helpers.js';

test('stop() drops the listener and start() listens again on the same port', async (t) => {
  const r = await startTestRegistry();
  try {
    const port = r.registry.port;
    t.is((await fetch(`${r.url}/v2/`)).status, 200);
    await r.registry.stop();
    t.false(r.registry.listening);
    await t.throwsAsync(fetch(`${r.url}/v2/`));
    await r.registry.start();
    t.is(r.registry.port, port);
    t.is((await fetch(`${r.url}/v2/`)).status, 200);
    const kinds = r.events.map((e) => e.kind).filter((k) => k === 'registry.listening' || k === 'registry.stopped');
    t.deepEqual(kinds, ['registry.listening', 'registry.stopped', 'registry.listening']);
  } finally {
    await r.close();
  }
});

test('stop() cuts a blob download in progress', async (t) => {
  const r = await startTestRegistry();
  try {
    const image = makeImage([2_000_000]);
    await pushImage(r.url, 'faults/cut', image);
    r.registry.faults.slowBytesPerSecond = 500_000;
    const response = await fetch(`${r.url}/v2/faults/cut/blobs/${image.layers[0]!.digest}`);
    t.is(response.status, 200);
    setTimeout(() => void r.registry.stop(), 300);
    await t.throwsAsync(response.arrayBuffer());
    // The request log proves the cut: the body promised its length and sent less.
    const layer = image.layers[0]!;
    const find = () =>
      r.events.find((e) => e.kind === 'registry.request' && e.method === 'GET' && e.path.endsWith(layer.digest));
    for (let i = 0; i < 50 && !find(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const logged = find();
    t.like(logged, { kind: 'registry.request', status: 200, length: layer.size });
    const sent = (logged as { bytes: number }).bytes;
    t.true(sent > 0 && sent < layer.size, `${sent} of ${layer.size} bytes`);
  } finally {
    await r.close();
  }
});

test('faults: corruptBlobs flips layer bytes (same length) but leaves configs and manifests intact', async (t) => {
  const r = await startTestRegistry();
  try {
    const image = makeImage([100_000]);
    await pushImage(r.url, 'faults/corrupt', image);
    const layer = image.layers[0]!;
    r.registry.faults.corruptBlobs = true;
    const bad = Buffer.from(await (await fetch(`${r.url}/v2/faults/corrupt/blobs/${layer.digest}`)).arrayBuffer());
    t.is(bad.length, layer.size);
    t.not(digestOf(bad), layer.digest);
    const config = Buffer.from(
      await (await fetch(`${r.url}/v2/faults/corrupt/blobs/${image.config.digest}`)).arrayBuffer(),
    );
    t.is(digestOf(config), image.config.digest);
    const manifest = Buffer.from(await (await fetch(`${r.url}/v2/faults/corrupt/manifests/latest`)).arrayBuffer());
    t.is(digestOf(manifest), image.manifest.digest);
    r.registry.faults.corruptBlobs = false;
    const good = Buffer.from(await (await fetch(`${r.url}/v2/faults/corrupt/blobs/${layer.digest}`)).arrayBuffer());
    t.is(digestOf(good), layer.digest);
    // The request log says which responses were corrupted: the first layer GET, not the config, not the second.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const blobGets = r.events.filter(
      (e) => e.kind === 'registry.request' && e.method === 'GET' && e.path.includes('/blobs/'),
    ) as {
      path: string;
      corrupted?: true;
      bytes: number;
      length?: number;
    }[];
    t.deepEqual(
      blobGets.map((e) => [
        e.path.endsWith(layer.digest) ? 'layer' : 'config',
        e.corrupted ?? false,
        e.bytes === e.length,
      ]),
      [
        ['layer', true, true],
        ['config', false, true],
        ['layer', false, true],
      ],
    );
  } finally {
    await r.close();
  }
});

test('faults: slowBytesPerSecond throttles blob downloads and reports progress along the way', async (t) => {
  const r = await startTestRegistry();
  try {
    const image = makeImage([400_000]);
    await pushImage(r.url, 'faults/slow', image);
    const layer = image.layers[0]!;
    r.registry.faults.slowBytesPerSecond = 400_000;
    const started = Date.now();
    const body = Buffer.from(await (await fetch(`${r.url}/v2/faults/slow/blobs/${layer.digest}`)).arrayBuffer());
    const elapsed = Date.now() - started;
    t.is(digestOf(body), layer.digest);
    t.true(elapsed >= 800, `took ${elapsed} ms for ${layer.size} bytes at 400 kB/s`);
    const progress = r.events.filter((e) => e.kind === 'blob.progress' && e.digest === layer.digest) as {
      sent: number;
    }[];
    t.true(progress.length >= 3, `${progress.length} progress events`);
    t.true(progress.length <= Math.ceil(elapsed / 250) + 2, 'progress is throttled');
    t.is(progress.at(-1)!.sent, layer.size);
    for (let i = 1; i < progress.length; i++) t.true(progress[i]!.sent >= progress[i - 1]!.sent);
  } finally {
    await r.close();
  }
});

test('store API: push blobs and a manifest without HTTP, then pull them over HTTP', async (t) => {
  const r = await startTestRegistry();
  try {
    const store = r.registry.store;
    const image = makeImage([1000, 2000]);
    await t.throwsAsync(store.putManifest('api/direct', 'v1', image.manifest.bytes, image.manifest.mediaType), {
      message: /unknown to the registry/,
    });
    for (const b of [image.config, ...image.layers]) {
      t.deepEqual(await store.putBlob(b.bytes, b.digest), { digest: b.digest, size: b.size });
      t.true(await store.hasBlob(b.digest));
    }
    const result = await store.putManifest('api/direct', 'v1', image.manifest.bytes, image.manifest.mediaType);
    t.is(result.digest, image.manifest.digest);
    const response = await fetch(`${r.url}/v2/api/direct/manifests/v1`);
    t.is(response.headers.get('docker-content-digest'), image.manifest.digest);
    const layer = await fetch(`${r.url}/v2/api/direct/blobs/${image.layers[1]!.digest}`);
    t.is(digestOf(Buffer.from(await layer.arrayBuffer())), image.layers[1]!.digest);
    const got = await store.getManifest('api/direct', 'v1');
    t.is(got?.digest, image.manifest.digest);
    for (const bad of ['../escape', '/abs', 'a/../../b'])
      await t.throwsAsync(store.putManifest(bad, 'v1', image.manifest.bytes, image.manifest.mediaType), {
        message: /invalid repository name/,
      });
    await t.throwsAsync(store.linkBlob('api/direct', 'sha256:../../etc'), { message: /digest/ });
  } finally {
    await r.close();
  }
});

test('gc: removes blobs of deleted manifests only, respects the grace period, keeps shared blobs', async (t) => {
  const r = await startTestRegistry();
  try {
    const keep = makeImage([1000]);
    const drop = makeImage([2000]);
    await pushImage(r.url, 'gc/keep', keep);
    await pushImage(r.url, 'gc/drop', drop);
    // The kept image's layer is also in the dropped repository (mount): still referenced, so kept.
    const mount = await fetch(`${r.url}/v2/gc/drop/blobs/uploads/?mount=${keep.layers[0]!.digest}&from=gc/keep`, {
      method: 'POST',
    });
    t.is(mount.status, 201);
    t.is((await fetch(`${r.url}/v2/gc/drop/manifests/${drop.manifest.digest}`, { method: 'DELETE' })).status, 202);
    const store = r.registry.store;
    const young = await collectGarbage(store);
    t.deepEqual(young.removedBlobs, [], 'everything is younger than the default grace period');
    const dry = await collectGarbage(store, { graceMs: 0, dryRun: true });
    t.true(dry.removedBlobs.length > 0);
    t.true(await store.hasBlob(drop.layers[0]!.digest));
    const result = await collectGarbage(store, { graceMs: 0 });
    t.deepEqual(
      [...result.removedBlobs].sort(),
      [drop.manifest.digest, drop.config.digest, drop.layers[0]!.digest].sort(),
    );
    for (const b of [keep.manifest, keep.config, ...keep.layers]) t.true(await store.hasBlob(b.digest));
    const pulled = await fetch(`${r.url}/v2/gc/keep/blobs/${keep.layers[0]!.digest}`);
    t.is(digestOf(Buffer.from(await pulled.arrayBuffer())), keep.layers[0]!.digest);
    const gone = await fetch(`${r.url}/v2/gc/drop/blobs/${drop.layers[0]!.digest}`);
    t.is(gone.status, 404);
    t.deepEqual(await errorCodes(gone), ['BLOB_UNKNOWN']);
  } finally {
    await r.close();
  }
});

test('uploads: sessions expire after the TTL and at open; temp leftovers are removed at open', async (t) => {
  const storage = await tempDir();
  try {
    const store = await RegistryStore.open(storage, { uploadTtlMs: 60_000 });
    const old = await store.createUpload('up/expire');
    const fresh = await store.createUpload('up/expire');
    const past = new Date(Date.now() - 120_000);
    await utimes(join(storage, 'uploads', old, 'data'), past, past);
    await writeFile(join(storage, 'tmp', 'leftover'), randomBytes(100));
    await mkdir(join(storage, 'tmp', '999999999'));
    await writeFile(join(storage, 'tmp', '999999999', 'dead'), randomBytes(100));
    const reopened = await RegistryStore.open(storage, { uploadTtlMs: 60_000 });
    t.deepEqual(await readdir(join(storage, 'tmp')), [String(process.pid)], 'only the live process keeps its space');
    t.deepEqual(await readdir(join(storage, 'uploads')), [fresh]);
    await t.throwsAsync(reopened.uploadSize('up/expire', old), { message: /upload unknown/ });
    t.is(await reopened.uploadSize('up/expire', fresh), 0);
    // A session resumed after a restart (no hash state in memory) is rehashed at completion.
    const bytes = randomBytes(5000);
    const { Readable } = await import('node:stream');
    await reopened.appendUpload('up/expire', fresh, Readable.from([bytes.subarray(0, 2000)]), 0);
    const third = await RegistryStore.open(storage, { uploadTtlMs: 60_000 });
    const info = await third.completeUpload('up/expire', fresh, digestOf(bytes), Readable.from([bytes.subarray(2000)]));
    t.deepEqual(info, { digest: digestOf(bytes), size: 5000 });
  } finally {
    await rm(storage, { recursive: true, force: true });
  }
});

test('cli: registry gc reports and removes unreferenced blobs; bad subcommands are usage errors', async (t) => {
  const r = await startTestRegistry();
  try {
    const image = makeImage([1000]);
    await pushImage(r.url, 'cli/gc', image);
    t.is((await pushManifest(r.url, 'cli/gc', 'other', image.manifest)).status, 201);
    await fetch(`${r.url}/v2/cli/gc/manifests/${image.manifest.digest}`, { method: 'DELETE' });
    await r.registry.stop(); // gc refuses while another process serves the store
    const result = await runCli(['registry', 'gc', '--storage', r.storage, '--grace', '0', '--json']);
    t.is(result.code, 0, result.stderr);
    const parsed = JSON.parse(result.stdout) as { removedBlobs: string[] };
    t.is(parsed.removedBlobs.length, 3);
    const usage = await runCli(['registry', 'frobnicate']);
    t.is(usage.code, 2);
    t.regex(usage.stderr, /unknown registry subcommand/);
    const port = await runCli(['registry', 'serve', '--port', 'abc']);
    t.is(port.code, 2);
  } finally {
    await r.close();
  }
});

test('blob.progress contract: per GET response a series with rising sent and one final event, last; HEAD emits none', async (t) => {
  const r = await startTestRegistry();
  try {
    const image = makeImage([300_000]);
    await pushImage(r.url, 'events/progress', image);
    const layer = image.layers[0]!;
    r.registry.faults.slowBytesPerSecond = 600_000;
    const url = `${r.url}/v2/events/progress/blobs/${layer.digest}`;
    const series = async (init?: RequestInit) => {
      const before = r.events.length;
      const response = await fetch(url, init);
      await response.arrayBuffer();
      // The final event goes out with the last byte; the response's close follows it.
      await new Promise((resolve) => setTimeout(resolve, 50));
      return r.events.slice(before).filter((e) => e.kind === 'blob.progress') as { sent: number; total: number }[];
    };
    for (const events of [await series(), await series()]) {
      t.true(events.length >= 2, `${events.length} events`);
      for (let i = 1; i < events.length; i++) t.true(events[i]!.sent > events[i - 1]!.sent);
      t.deepEqual(
        events.filter((e) => e.sent === e.total),
        [events.at(-1)!],
      );
      t.is(events.at(-1)!.total, layer.size);
    }
    const ranged = await series({ headers: { range: 'bytes=100000-' } });
    t.is(ranged.at(-1)!.total, layer.size - 100_000);
    t.is(ranged.filter((e) => e.sent === e.total).length, 1);
    t.deepEqual(await series({ method: 'HEAD' }), []);
  } finally {
    await r.close();
  }
});
