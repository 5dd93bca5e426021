import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { buildMcoImage, pushMcoImage } from '../../src/oscontainer/mco-image.js';
import { RegistryClient } from '../../src/oscontainer/registry-client.js';
import { startRegistry } from '../../src/registry/server.js';
import { repoRoot } from '../helpers/cli.js';

const sources = {
  standIn: join(repoRoot, 'images', 'fixture', 'mco', 'machine-config-daemon'),
  busybox: '/bin/busybox',
};

test('the fixture MCO image is reproducible: the stand-in, busybox as /bin/sh and its applets, mtime 0, root', async (t) => {
  const [a, b] = await Promise.all([buildMcoImage(sources), buildMcoImage(sources)]);
  t.is(a.digest, b.digest);
  t.deepEqual(a.layer.bytes, b.layer.bytes);
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-mco-'));
  try {
    await writeFile(join(dir, 'layer.tar.gz'), a.layer.bytes);
    const listing = execFileSync('tar', ['-tvzf', join(dir, 'layer.tar.gz'), '--numeric-owner'], { encoding: 'utf8' })
      .trim()
      .split('\n');
    const names = listing.map((line) => line.split(/\s+/).slice(5).join(' '));
    t.true(names.includes('usr/bin/machine-config-daemon'));
    t.true(names.includes('bin/busybox'));
    t.true(names.includes('bin/sh -> busybox'));
    t.true(names.includes('bin/chroot -> busybox'));
    t.true(listing.every((line) => line.includes(' 0/0 ') && line.includes('1970-01-01')));
    t.regex(listing.find((line) => line.endsWith('usr/bin/machine-config-daemon')) ?? '', /^-rwxr-xr-x/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const config = JSON.parse(a.config.bytes.toString());
  t.deepEqual(config.config.Entrypoint, ['/usr/bin/machine-config-daemon']);
});

test('pushed to the embedded registry under its digest', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-mco-reg-'));
  const registry = await startRegistry({ storage: join(dir, 'registry'), port: 0 });
  try {
    const image = await buildMcoImage(sources);
    const digest = await pushMcoImage(image, registry.address, 'devpivot-fixture/mco');
    t.is(digest, image.digest);
    const fetched = await new RegistryClient(registry.address).getManifest('devpivot-fixture/mco', digest);
    t.truthy(fetched);
    t.is(await pushMcoImage(image, registry.address, 'devpivot-fixture/mco'), digest, 'a second push is the same');
  } finally {
    await registry.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
