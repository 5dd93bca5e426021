/**
 * Native images in registries: pushed to the embedded registry and inspected with real skopeo (both bootable
 * labels, the final diff_id, amd64/linux, one layer), `devpivot pull` copies them byte for byte, and `devpivot
 * build --format native` says what it wrote.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { execa } from 'execa';
import { MediaType } from '../../../src/oci/media-types.js';
import { buildOscontainer, type OscontainerImage } from '../../../src/oscontainer/build.js';
import { pushOscontainer } from '../../../src/oscontainer/push.js';
import { type RunningRegistry, startRegistry } from '../../../src/registry/server.js';
import { runCli } from '../../helpers/cli.js';
import { type DockerRegistry, startDockerRegistry } from '../docker-registry.js';
import { skopeoInspect } from '../skopeo.js';
import { makeOsTree, type OsTree } from './os-tree.js';

let os: OsTree;
let image: OscontainerImage;
let oci: OscontainerImage;
let embedded: RunningRegistry;
let docker: DockerRegistry;
let storage: string;

test.before(async () => {
  storage = await mkdtemp(join(tmpdir(), 'devpivot-test-native-registry-'));
  os = await makeOsTree({ largeKiB: 256 });
  [image, oci, embedded, docker] = await Promise.all([
    buildOscontainer({ repo: os.repo, commit: os.commit, format: 'native' }),
    buildOscontainer({ repo: os.repo, commit: os.commit, format: 'native', oci: true }),
    startRegistry({ storage, port: 0 }),
    startDockerRegistry(),
  ]);
});
test.after.always(async () => {
  await Promise.all([embedded?.stop(), docker?.stop(), image?.dispose(), oci?.dispose()]);
  await Promise.all([
    os && rm(os.dir, { recursive: true, force: true }),
    storage && rm(storage, { recursive: true, force: true }),
  ]);
});

test('pushed to the embedded registry, skopeo sees both bootable labels, the final diff_id and one layer', async (t) => {
  const ref = `${embedded.address}/devpivot/native:v3`;
  const pushed = await pushOscontainer(image, ref);
  t.is(pushed.digest, image.digest);
  const raw = await skopeoInspect(ref, '--raw');
  t.is(raw.mediaType, MediaType.dockerManifest);
  t.is(raw.config.mediaType, MediaType.dockerConfig);
  t.deepEqual(
    raw.layers.map((l: { mediaType: string; digest: string }) => [l.mediaType, l.digest]),
    [[MediaType.dockerLayerGzip, image.layer.digest]],
  );
  const config = await skopeoInspect(ref, '--config');
  const labels = config.config.Labels;
  t.is(labels['ostree.bootable'], 'true');
  t.is(labels['containers.bootc'], '1');
  t.is(labels['ostree.commit'], os.commit);
  t.is(labels['org.opencontainers.image.version'], '3.0');
  t.is(labels['ostree.final-diffid'], config.rootfs.diff_ids[0]);
  t.is(config.rootfs.diff_ids[0], image.layer.diffId);
  const info = await skopeoInspect(ref);
  t.is(info.Digest, image.digest);
  t.is(info.Architecture, 'amd64');
  t.is(info.Os, 'linux');
});

test('the OCI variant: OCI media types, the labels also as manifest annotations', async (t) => {
  const ref = `${embedded.address}/devpivot/native:oci`;
  await pushOscontainer(oci, ref);
  const raw = await skopeoInspect(ref, '--raw');
  t.is(raw.mediaType, MediaType.ociManifest);
  t.is(raw.config.mediaType, MediaType.ociConfig);
  t.is(raw.layers[0].mediaType, MediaType.ociLayerGzip);
  t.is(raw.layers[0].digest, image.layer.digest); // the same layer blob as the Docker variant
  const config = await skopeoInspect(ref, '--config');
  t.deepEqual(raw.annotations, config.config.Labels);
  t.is(raw.annotations['ostree.bootable'], 'true');
});

test("zstd layers: an OCI tar+zstd layer whose decompressed tar is the gzip build's (same diff_id), reproducible; skopeo copies it out and zstd reads it", async (t) => {
  const zstd = await buildOscontainer({ repo: os.repo, commit: os.commit, format: 'native', compression: 'zstd' });
  const again = await buildOscontainer({ repo: os.repo, commit: os.commit, format: 'native', compression: 'zstd' });
  t.teardown(() => Promise.all([zstd.dispose(), again.dispose()]));
  t.is(again.digest, zstd.digest, 'the same commit gives the same digest');
  t.is(zstd.layer.diffId, image.layer.diffId, "the gzip build's tar, byte for byte");
  t.not(zstd.layer.digest, image.layer.digest);
  const ref = `${embedded.address}/devpivot/native:zstd`;
  await pushOscontainer(zstd, ref);
  const raw = await skopeoInspect(ref, '--raw');
  t.is(raw.mediaType, MediaType.ociManifest, 'zstd makes it an OCI image');
  t.deepEqual(
    raw.layers.map((l: { mediaType: string; digest: string }) => [l.mediaType, l.digest]),
    [[MediaType.ociLayerZstd, zstd.layer.digest]],
  );
  const config = await skopeoInspect(ref, '--config');
  t.is(config.rootfs.diff_ids[0], image.layer.diffId);
  t.is(config.config.Labels['ostree.final-diffid'], image.layer.diffId);
  // skopeo copies it to an OCI layout unchanged; zstd -d of that blob hashes to the diff_id
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-zstd-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await execa('skopeo', ['copy', '--src-tls-verify=false', `docker://${ref}`, `oci:${dir}:x`]);
  const blob = join(dir, 'blobs', 'sha256', zstd.layer.digest.slice('sha256:'.length));
  const { stdout } = await execa('sh', ['-c', 'zstd -dc "$1" | sha256sum', 'sh', blob]);
  t.is(`sha256:${stdout.split(' ')[0]}`, image.layer.diffId);
  // a legacy image is gzip: what openshift/pivot reads
  await t.throwsAsync(buildOscontainer({ repo: os.repo, commit: os.commit, compression: 'zstd' }), {
    message: /only a native image can have zstd layers/,
  });
});

test('devpivot pull copies a native image unchanged: same digest, same manifest and config bytes', async (t) => {
  const source = `${docker.hostPort}/os/native:v3`;
  await pushOscontainer(image, source);
  const result = await runCli(['pull', source, '--to', `${embedded.address}/mirror/native:v3`]);
  t.is(result.code, 0, result.stderr);
  t.is(result.stdout.trim(), `${embedded.address}/mirror/native@${image.digest}`);
  const copied = `${embedded.address}/mirror/native:v3`;
  t.deepEqual(await skopeoInspect(copied, '--raw'), JSON.parse(image.manifest.bytes.toString()));
  t.deepEqual(await skopeoInspect(copied, '--config'), JSON.parse(image.config.bytes.toString()));
  t.is((await skopeoInspect(copied)).Digest, image.digest);
});

test('devpivot build --format native --push prints the pinned image and says it wrote the native format', async (t) => {
  const target = `${embedded.address}/devpivot/fromdir:native`;
  const result = await runCli([
    'build',
    '--from-dir',
    os.tree,
    '--version',
    '4.0',
    '--format',
    'native',
    '--push',
    target,
  ]);
  t.is(result.code, 0, result.stderr);
  t.regex(result.stdout.trim(), new RegExp(`^${embedded.address}/devpivot/fromdir@sha256:[0-9a-f]{64}$`));
  t.regex(result.stderr, /built native oscontainer 4\.0 \([0-9a-f]{12}\)/);
  const labels = (await skopeoInspect(result.stdout.trim(), '--config')).config.Labels;
  t.is(labels['ostree.bootable'], 'true');
  t.is(labels['org.opencontainers.image.version'], '4.0');

  const json = await runCli(['build', '--from-dir', os.tree, '--version', '4.0', '--format', 'native', '--json']);
  t.is(json.code, 0, json.stderr);
  const summary = JSON.parse(json.stdout);
  t.is(summary.format, 'native');
  t.is(summary.digest, result.stdout.trim().split('@')[1]);
  const zstd = await runCli(['build', '--from-dir', os.tree, '--version', '4.0', '--compression', 'zstd', '--json']);
  t.is(zstd.code, 2, 'zstd needs --format native');
  t.regex(zstd.stderr, /--compression zstd applies to --format native/);
  const unknown = await runCli(['build', '--from-dir', os.tree, '--version', '4.0', '--compression', 'xz']);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /unknown --compression 'xz'.*\n.*gzip, zstd/);
  const legacy = await runCli(['build', '--from-dir', os.tree, '--version', '4.0']);
  t.regex(legacy.stderr, /built legacy oscontainer 4\.0/);
  const bad = await runCli(['build', '--from-dir', os.tree, '--version', '4.0', '--format', 'bootc']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /unknown --format 'bootc'/);
  t.regex(bad.stderr, /legacy, native/);
});
