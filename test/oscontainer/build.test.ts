import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { execa } from 'execa';
import { EventBus } from '../../src/core/bus.js';
import type { DevpivotEvent } from '../../src/core/events.js';
import { buildOscontainer } from '../../src/oscontainer/build.js';
import { pushOscontainer, pushToStore } from '../../src/oscontainer/push.js';
import { startRegistry } from '../../src/registry/server.js';
import { runCli } from '../helpers/cli.js';
import { type DockerRegistry, startDockerRegistry } from './docker-registry.js';
import { makeTestRepo, type TestRepo } from './ostree-fixture.js';
import { skopeoInspect } from './skopeo.js';

let registry: DockerRegistry;
let source: TestRepo;

test.before(async () => {
  [registry, source] = await Promise.all([startDockerRegistry(), makeTestRepo(256)]);
});
test.after.always(async () => {
  await registry?.stop();
  if (source) await rm(source.dir, { recursive: true, force: true });
});

test('build + push: skopeo sees the labels, the digest and one /srv/repo layer', async (t) => {
  const bus = new EventBus();
  const events: DevpivotEvent[] = [];
  bus.subscribe((event) => events.push(event));
  const image = await buildOscontainer({ repo: source.repo, commit: 'testos/stable', bus, ref: 'test' });
  t.teardown(() => image.dispose());
  t.is(image.commit, source.v2);
  t.is(image.version, '2.0');
  const pushed = await pushOscontainer(image, `${registry.hostPort}/os/test:v2`, { bus });
  t.is(pushed.digest, image.digest);
  t.is(pushed.pinned, `${registry.hostPort}/os/test@${image.digest}`);

  const info = await skopeoInspect(`${registry.hostPort}/os/test:v2`);
  t.is(info.Digest, image.digest);
  t.is(info.Labels['com.coreos.ostree-commit'], source.v2);
  t.is(info.Labels.version, '2.0');
  t.is(info.Labels['org.opencontainers.image.version'], '2.0');
  t.is(info.Architecture, 'amd64');
  t.is(info.Os, 'linux');
  t.deepEqual(info.Layers, [image.layer.digest]);
  const raw = await skopeoInspect(`${registry.hostPort}/os/test:v2`, '--raw');
  t.is(raw.mediaType, 'application/vnd.docker.distribution.manifest.v2+json');
  const config = await skopeoInspect(`${registry.hostPort}/os/test:v2`, '--config');
  t.deepEqual(config.config.Entrypoint, ['/noentry']);
  t.deepEqual(config.rootfs.diff_ids, [image.layer.diffId]);

  const kinds = events.map((e) => e.kind);
  t.true(kinds.includes('image.progress'));
  t.true(kinds.includes('image.built'));
  const pushedEvent = events.find((e) => e.kind === 'image.pushed');
  t.like(pushedEvent, { ref: pushed.pinned, digest: image.digest });
});

test('the layer holds an archive repo with exactly that commit (not its parent) and no refs', async (t) => {
  const image = await buildOscontainer({ repo: source.repo, commit: source.v2 });
  t.teardown(() => image.dispose());
  const sh = async (file: string, args: string[]) => (await execa(file, args)).stdout;
  const out = await mkdtemp(join(tmpdir(), 'devpivot-test-layer-'));
  t.teardown(() => rm(out, { recursive: true, force: true }));
  await sh('tar', ['-xzf', image.layer.path, '-C', out]);
  const listing = await sh('tar', ['-tzvf', image.layer.path]);
  t.regex(listing, /^drwxr-xr-x 0\/0 +0 1970-01-01 00:00 srv\/$/m);
  t.notRegex(listing, /\.lock/);
  const repo = join(out, 'srv', 'repo');
  t.is((await sh('ostree', ['refs', `--repo=${repo}`])).trim(), '');
  const commits: string[] = [];
  for (const prefix of await readdir(join(repo, 'objects'))) {
    for (const name of await readdir(join(repo, 'objects', prefix)))
      if (name.endsWith('.commit')) commits.push(prefix + name);
  }
  t.deepEqual(commits, [`${source.v2}.commit`]); // v1, its parent, is left out
  t.regex(await sh('ostree', ['fsck', `--repo=${repo}`]), /Verifying content integrity of 1 commit/);
  t.is(
    await sh('ostree', ['cat', `--repo=${repo}`, source.v2, '/usr/lib/os-release']),
    'NAME=devpivot-test\nVERSION_ID=2',
  );
});

test('two builds of one commit give one digest; Docker and OCI formats differ only in the manifest', async (t) => {
  const a = await buildOscontainer({
    repo: source.repo,
    commit: source.v2,
    gzip: { workers: 1, chunkSize: 64 * 1024 },
  });
  const b = await buildOscontainer({
    repo: source.repo,
    commit: source.v2,
    gzip: { workers: 2, chunkSize: 64 * 1024 },
  });
  const oci = await buildOscontainer({
    repo: source.repo,
    commit: source.v2,
    oci: true,
    gzip: { chunkSize: 64 * 1024 },
  });
  t.teardown(() => Promise.all([a.dispose(), b.dispose(), oci.dispose()]));
  t.is(a.digest, b.digest);
  t.is(a.layer.digest, b.layer.digest);
  t.is(oci.layer.digest, a.layer.digest);
  t.not(oci.digest, a.digest);
  const pushed = await pushOscontainer(oci, `${registry.hostPort}/os/test:oci`);
  const raw = await skopeoInspect(`${registry.hostPort}/os/test:oci`, '--raw');
  t.is(raw.mediaType, 'application/vnd.oci.image.manifest.v1+json');
  t.is(raw.layers[0].mediaType, 'application/vnd.oci.image.layer.v1.tar+gzip');
  t.is((await skopeoInspect(`${registry.hostPort}/os/test@${pushed.digest}`)).Labels.version, '2.0');
});

test('push into the embedded registry; a second push skips existing blobs and keeps the digest', async (t) => {
  const storage = await mkdtemp(join(tmpdir(), 'devpivot-test-embedded-'));
  const embedded = await startRegistry({ storage, port: 0 });
  t.teardown(async () => {
    await embedded.stop();
    await rm(storage, { recursive: true, force: true });
  });
  const image = await buildOscontainer({ repo: source.repo, commit: source.v2 });
  t.teardown(() => image.dispose());
  const first = await pushOscontainer(image, `${embedded.address}/devpivot/os:v2`);
  const bus = new EventBus();
  const uploads: number[] = [];
  bus.on('image.progress', (e) => uploads.push(e.done));
  const second = await pushOscontainer(image, `${embedded.address}/devpivot/os:again`, { bus });
  t.is(second.digest, first.digest);
  // Skipped blobs report done == total at once; an upload would report intermediate chunks.
  t.deepEqual(uploads, [image.layer.size, image.config.bytes.byteLength]);
  t.is((await skopeoInspect(`${embedded.address}/devpivot/os:v2`)).Labels['com.coreos.ostree-commit'], source.v2);
  // In process, straight into the store: the same image, served over HTTP as if pushed.
  const v1 = await buildOscontainer({ repo: source.repo, commit: source.v1 });
  t.teardown(() => v1.dispose());
  const local = await pushToStore(v1, embedded.store, {
    address: embedded.address,
    repository: 'devpivot/os',
    tag: 'v1',
  });
  t.is(local.digest, v1.digest);
  const info = await skopeoInspect(`${embedded.address}/devpivot/os:v1`);
  t.is(info.Digest, v1.digest);
  t.is(info.Labels.version, '1.0');
});

test('a guest-style consumer (skopeo copy, busybox tar, ostree pull-local) imports the commit', async (t) => {
  // What the fixture's pivot agent and RHCOS pivot do with the image, with the same tools, on the host.
  const image = await buildOscontainer({ repo: source.repo, commit: source.v2 });
  t.teardown(() => image.dispose());
  const pushed = await pushOscontainer(image, `${registry.hostPort}/os/consumer:v2`);
  const work = await mkdtemp(join(tmpdir(), 'devpivot-test-consumer-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  await execa('skopeo', [
    'copy',
    '--quiet',
    '--src-tls-verify=false',
    `docker://${pushed.pinned}`,
    `dir:${work}/image`,
  ]);
  await mkdir(join(work, 'root'));
  await execa('busybox', ['tar', '-xzf', join(work, 'image', image.layer.digest.slice(7)), '-C', join(work, 'root')]);
  const target = join(work, 'sysroot-repo');
  await execa('ostree', ['init', '--mode=bare-user', `--repo=${target}`]);
  await execa('ostree', ['pull-local', `--repo=${target}`, join(work, 'root', 'srv', 'repo'), source.v2]);
  const { stdout } = await execa('ostree', ['cat', `--repo=${target}`, source.v2, '/usr/lib/os-release']);
  t.is(stdout, 'NAME=devpivot-test\nVERSION_ID=2');
});

test('devpivot build --from-dir --push prints the pinned image; --ostree-repo without --commit is a usage error', async (t) => {
  const tree = join(source.dir, 'tree');
  const result = await runCli([
    'build',
    '--from-dir',
    tree,
    '--version',
    '9.9',
    '--push',
    `${registry.hostPort}/os/fromdir:9.9`,
  ]);
  t.is(result.code, 0, result.stderr);
  t.regex(result.stdout.trim(), new RegExp(`^${registry.hostPort}/os/fromdir@sha256:[0-9a-f]{64}$`));
  t.regex(result.stderr, /layer: 100%/);
  const again = await runCli(['build', '--from-dir', tree, '--version', '9.9', '--json']);
  t.is(again.code, 0, again.stderr);
  t.is(JSON.parse(again.stdout).digest, result.stdout.trim().split('@')[1]);
  t.is((await skopeoInspect(result.stdout.trim())).Labels.version, '9.9');

  const bad = await runCli(['build', '--ostree-repo', source.repo]);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--ostree-repo needs --commit/);
  const missing = await runCli(['build', '--ostree-repo', source.repo, '--commit', 'no/such/ref']);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /OSTREE_COMMIT_NOT_FOUND/);
});
