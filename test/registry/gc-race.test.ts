/**
 * GC and pushes agree (issue 28 item 2), and opening a store never destroys another process's writes (item 3).
 */
import { spawn } from 'node:child_process';
import { stat, utimes } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { collectGarbage } from '../../src/registry/gc.js';
import { RegistryStore } from '../../src/registry/store.js';
import { binPath, runCli } from '../helpers/cli.js';
import { tempDir } from './helpers.js';

const storeModule = fileURLToPath(new URL('../../src/registry/store.js', import.meta.url));
const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );
const OLD = new Date(Date.now() - 2 * 3_600_000);

test('a manifest pushed during the mark phase never resolves to a swept layer', async (t) => {
  const root = await tempDir();
  const store = await RegistryStore.open(root);
  const layer = Buffer.from('layer content');
  const config = Buffer.from('{}');
  const { digest: layerDigest } = await store.putBlob(layer);
  const { digest: configDigest } = await store.putBlob(config);
  for (const digest of [layerDigest, configDigest]) {
    await store.linkBlob('app', digest);
    await utimes(store.layout.blob(digest), OLD, OLD);
    await utimes(store.layout.layerLink('app', digest), OLD, OLD);
  }
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layerDigest, size: layer.length }],
    }),
  );
  // The push (its blobs already there, as skopeo skips blobs the registry has) starts while gc marks, and is
  // slow between checking its blobs and writing its links: the window the old sweep deleted into.
  let gcDone: Promise<unknown> | undefined;
  const has = store.blobs.has.bind(store.blobs);
  store.blobs.has = async (digest: string) => {
    const found = await has(digest);
    if (digest === layerDigest) await gcDone; // the last blob the push checks
    return found;
  };
  let push: Promise<unknown> | undefined;
  const digests = store.repositories.manifestDigests.bind(store.repositories);
  store.repositories.manifestDigests = async (repo: string) => {
    push ??= store.putManifest('app', 'latest', manifest).catch((error: Error) => error);
    return digests(repo);
  };
  gcDone = collectGarbage(store, { graceMs: 3_600_000 });
  await gcDone;
  const pushed = await push;
  const stored = await store.getManifest('app', 'latest');
  if (stored) {
    t.true(await store.hasBlob(layerDigest), 'app:latest resolves, so its layer must be there');
    t.true(await store.hasBlob(configDigest));
  } else t.true(pushed instanceof Error, 'the push was refused, not silently broken');
});

test('opening a store keeps the in-flight temp files of another live process', async (t) => {
  const root = await tempDir();
  // Another live process holds the store open and is writing a temp file (an upload in flight).
  const script =
    `const { RegistryStore } = await import(${JSON.stringify(storeModule)});` +
    `const { writeFile } = await import('node:fs/promises');` +
    `const store = await RegistryStore.open(${JSON.stringify(root)});` +
    `const temp = store.layout.temp(); await writeFile(temp, 'partial');` +
    `console.log(temp); setTimeout(() => {}, 30000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => child.kill());
  const temp = await new Promise<string>((resolve) =>
    child.stdout.once('data', (data) => resolve(String(data).trim())),
  );
  await RegistryStore.open(root);
  t.true(await exists(temp), 'the other process still has its temp file');
});

test('registry gc refuses while another process serves the store; --dry-run says so', async (t) => {
  const storage = await tempDir();
  const child = spawn(
    process.execPath,
    [binPath, 'registry', 'serve', '--port', '0', '--quiet', '--storage', storage],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  t.teardown(() => child.kill());
  await new Promise<void>((resolve) => {
    let out = '';
    child.stdout.on('data', (data) => {
      out += data;
      if (out.includes('listening on')) resolve();
    });
  });
  const refused = await runCli(['registry', 'gc', '--storage', storage]);
  t.not(refused.code, 0, refused.stdout);
  t.regex(refused.stderr, new RegExp(`REGISTRY_STORE_SERVING[\\s\\S]*pid ${child.pid}`));
  const dry = await runCli(['registry', 'gc', '--storage', storage, '--dry-run']);
  t.is(dry.code, 0, dry.stderr);
  t.regex(dry.stdout, new RegExp(`pid ${child.pid}.*serves this store`));
  child.kill();
  await new Promise((resolve) => child.once('exit', resolve));
  const after = await runCli(['registry', 'gc', '--storage', storage]);
  t.is(after.code, 0, after.stderr);
});
