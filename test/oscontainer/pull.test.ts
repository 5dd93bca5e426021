import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { execa } from 'execa';
import { EventBus } from '../../src/core/bus.js';
import { MediaType } from '../../src/oci/media-types.js';
import { buildAndPush, mirrorOscontainer } from '../../src/oscontainer/api.js';
import { buildOscontainer, type OscontainerImage } from '../../src/oscontainer/build.js';
import { copyImage } from '../../src/oscontainer/copy.js';
import { pushOscontainer } from '../../src/oscontainer/push.js';
import { RegistryClient } from '../../src/oscontainer/registry-client.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/server.js';
import { runCli } from '../helpers/cli.js';
import { startCuttingProxy } from './cutting-proxy.js';
import { type DockerRegistry, startDockerRegistry, TEST_PASSWORD, TEST_USER } from './docker-registry.js';
import { makeTestRepo, type TestRepo } from './ostree-fixture.js';
import { skopeoInspect } from './skopeo.js';
import { startTokenServer, type TokenServer } from './token-server.js';

let source: TestRepo;
let image: OscontainerImage;
let ociImage: OscontainerImage;
let plain: DockerRegistry;
let basic: DockerRegistry;
let tokens: TokenServer;
let bearer: DockerRegistry;
let embedded: RunningRegistry;
let dir: string;
const credentials = { username: TEST_USER, password: TEST_PASSWORD };

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-test-pull-'));
  source = await makeTestRepo(1024);
  image = await buildOscontainer({ repo: source.repo, commit: source.v2 });
  ociImage = await buildOscontainer({ repo: source.repo, commit: source.v2, oci: true });
  tokens = await startTokenServer(TEST_USER, TEST_PASSWORD);
  [plain, basic, bearer, embedded] = await Promise.all([
    startDockerRegistry(),
    startDockerRegistry({ htpasswd: true }),
    startDockerRegistry({
      token: { realm: tokens.realm, service: tokens.service, issuer: tokens.issuer, rootCertPem: tokens.certPem },
    }),
    startRegistry({ storage: join(dir, 'embedded'), port: 0 }),
  ]);
  await Promise.all([
    pushOscontainer(image, `${plain.hostPort}/os/test:v2`),
    pushOscontainer(image, `${basic.hostPort}/os/test:v2`, { credentials }),
  ]);
  // An auth file as `skopeo login` writes it.
  const auth = {
    auths: { [basic.hostPort]: { auth: Buffer.from(`${TEST_USER}:${TEST_PASSWORD}`).toString('base64') } },
  };
  await writeFile(join(dir, 'auth.json'), JSON.stringify(auth));
  await writeFile(join(dir, 'empty.json'), '{"auths":{}}');
});

test.after.always(async () => {
  await Promise.all([plain?.stop(), basic?.stop(), bearer?.stop(), tokens?.stop(), embedded?.stop()]);
  await image?.dispose();
  await ociImage?.dispose();
  await Promise.all([
    source && rm(source.dir, { recursive: true, force: true }),
    dir && rm(dir, { recursive: true, force: true }),
  ]);
});

const isolatedEnv = (authFile: string) => ({
  REGISTRY_AUTH_FILE: authFile,
  HOME: dir,
  XDG_RUNTIME_DIR: dir,
  DOCKER_CONFIG: dir,
});

test('devpivot pull from a Basic-auth registry into the embedded one keeps the digest', async (t) => {
  const result = await runCli(['pull', `${basic.hostPort}/os/test:v2`, '--to', `${embedded.address}/mirror/test:v2`], {
    env: isolatedEnv(join(dir, 'auth.json')),
  });
  t.is(result.code, 0, result.stderr);
  t.is(result.stdout.trim(), `${embedded.address}/mirror/test@${image.digest}`);
  const info = await skopeoInspect(`${embedded.address}/mirror/test:v2`);
  t.is(info.Digest, image.digest);
  t.deepEqual(info.Layers, [image.layer.digest]);
  t.is(info.Labels['com.coreos.ostree-commit'], source.v2);
});

test('without credentials the pull fails with REGISTRY_AUTH_FAILED and says where credentials come from', async (t) => {
  const result = await runCli(['pull', `${basic.hostPort}/os/test:v2`, '--to', `${embedded.address}/denied/test:v2`], {
    env: isolatedEnv(join(dir, 'empty.json')),
  });
  t.is(result.code, 1);
  t.regex(result.stderr, /error\[REGISTRY_AUTH_FAILED\]/);
  t.regex(result.stderr, /REGISTRY_AUTH_FILE/);
});

test('Bearer token flow: push and pull through a token server, digests kept, scopes requested', async (t) => {
  // OCI format here: skopeo's oci: transport ignores Docker-typed entries of an OCI layout's index.
  const pushed = await pushOscontainer(ociImage, `${bearer.hostPort}/secure/os:v2`, { credentials });
  t.is(pushed.digest, ociImage.digest);
  t.true(tokens.scopes.includes('repository:secure/os:pull,push'));
  const layout = join(dir, 'layout');
  const result = await copyImage(`${bearer.hostPort}/secure/os:v2`, `oci:${layout}:v2`, { source: { credentials } });
  t.is(result.digest, ociImage.digest);
  t.true(tokens.scopes.includes('repository:secure/os:pull'));
  const { stdout } = await execa('skopeo', ['inspect', `oci:${layout}:v2`]);
  t.is(JSON.parse(stdout).Digest, ociImage.digest);
  t.is(JSON.parse(stdout).Labels.version, '2.0');
  // Anonymous access is refused by the real registry: the token server is really in the loop.
  const anonymous = new RegistryClient(bearer.hostPort, { credentials: null });
  const error = await t.throwsAsync(anonymous.getManifest('secure/os', 'v2'));
  t.is((error as { code?: string }).code, 'REGISTRY_AUTH_FAILED');
});

test('a blob download cut mid-stream resumes with Range and still verifies', async (t) => {
  const proxy = await startCuttingProxy(
    plain.hostPort,
    new RegExp(`GET /v2/os/test/blobs/${image.layer.digest}`),
    300_000,
  );
  t.teardown(() => proxy.stop());
  t.true(image.layer.size > 600_000);
  const result = await copyImage(`${proxy.hostPort}/os/test:v2`, `${embedded.address}/resumed/test:v2`);
  t.is(result.digest, image.digest);
  t.is(proxy.cuts, 1);
  const layerGets = proxy.requests.filter((r) => r.includes(`/blobs/${image.layer.digest}`) && r.startsWith('GET'));
  t.is(layerGets.length, 2);
  t.regex(layerGets[1]!, /\r\nrange: bytes=\d+-/i);
  t.is((await skopeoInspect(`${embedded.address}/resumed/test:v2`)).Digest, image.digest);
});

test('an index: linux/amd64 is picked by default, --all copies the index itself byte for byte', async (t) => {
  const client = new RegistryClient(plain.hostPort);
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MediaType.dockerManifestList,
      manifests: [
        {
          mediaType: MediaType.dockerManifest,
          digest: image.digest,
          size: image.manifest.bytes.byteLength,
          platform: { architecture: 'arm64', os: 'linux' },
        },
        {
          mediaType: MediaType.dockerManifest,
          digest: image.digest,
          size: image.manifest.bytes.byteLength,
          platform: { architecture: 'amd64', os: 'linux' },
        },
      ],
    }),
  );
  const indexDigest = await client.putManifest('os/test', 'multi', index, MediaType.dockerManifestList);
  const one = await copyImage(`${plain.hostPort}/os/test:multi`, `${embedded.address}/multi/one:latest`);
  t.is(one.digest, image.digest);
  const all = await copyImage(`${plain.hostPort}/os/test:multi`, `${embedded.address}/multi/all:latest`, { all: true });
  t.is(all.digest, indexDigest);
  t.deepEqual(all.manifests, [image.digest, image.digest, indexDigest]);
  const raw = await skopeoInspect(`${embedded.address}/multi/all:latest`, '--raw');
  t.is(raw.manifests.length, 2);
  // Both entries name one manifest: its blobs are copied once, then found in place.
  t.is(all.blobsCopied, 2);
  t.is(all.blobsSkipped, 2);
});

test('engine helpers: buildAndPush and mirrorOscontainer return digest, commit and version', async (t) => {
  const built = await buildAndPush({
    repo: source.repo,
    commit: source.v1,
    target: `http://${embedded.address}/engine/os:v1`,
  });
  t.is(built.commit, source.v1);
  t.is(built.version, '1.0');
  t.is(built.pinned, `${embedded.address}/engine/os@${built.digest}`);
  t.is(built.format, 'legacy');
  const mirrored = await mirrorOscontainer(`${plain.hostPort}/os/test:v2`, `${embedded.address}/engine/mirror:v2`);
  t.deepEqual(mirrored, {
    digest: image.digest,
    pinned: `${embedded.address}/engine/mirror@${image.digest}`,
    commit: source.v2,
    version: '2.0',
    format: 'legacy',
  });
});

test('engine helpers: a native build and its mirror say native (the bootable label key)', async (t) => {
  const built = await buildAndPush({
    repo: source.repo,
    commit: source.v1,
    format: 'native',
    target: `http://${embedded.address}/engine/native:v1`,
  });
  t.is(built.format, 'native');
  t.is(built.commit, source.v1);
  const mirrored = await mirrorOscontainer(
    `${embedded.address}/engine/native@${built.digest}`,
    `${embedded.address}/engine/native-mirror:v1`,
    { insecure: true },
  );
  t.like(mirrored, { digest: built.digest, commit: source.v1, format: 'native' });
});

test('a copy within one registry mounts blobs instead of downloading them', async (t) => {
  const recorder = await startCuttingProxy(plain.hostPort, /^$/, 0);
  t.teardown(() => recorder.stop());
  const result = await copyImage(`${recorder.hostPort}/os/test:v2`, `${recorder.hostPort}/os/mounted:v2`);
  t.is(result.digest, image.digest);
  const requests = recorder.requests.map((r) => r.split('\r\n')[0]);
  t.is(result.blobsCopied, 2, JSON.stringify({ result, requests }, null, 1));
  t.false(
    requests.some((r) => /^GET \S+\/blobs\//.test(r!)),
    requests.join('\n'),
  );
  t.is(
    requests.filter((r) =>
      /^POST \/v2\/os\/mounted\/blobs\/uploads\/\?mount=sha256%3A[0-9a-f]{64}&from=os%2Ftest /.test(r!),
    ).length,
    2,
    requests.join('\n'),
  );
  t.is((await skopeoInspect(`${plain.hostPort}/os/mounted:v2`)).Digest, image.digest);
});

test('a corrupted blob is refused with DIGEST_MISMATCH and nothing is tagged at the destination', async (t) => {
  const storage = join(dir, 'faulty');
  const faulty = await startRegistry({ storage, port: 0, faults: { corruptBlobs: false } });
  t.teardown(() => faulty.stop());
  await pushOscontainer(image, `${faulty.address}/os/test:v2`);
  faulty.faults.corruptBlobs = true;
  const error = await t.throwsAsync(copyImage(`${faulty.address}/os/test:v2`, `${plain.hostPort}/corrupt/test:v2`));
  t.is((error as { code?: string }).code, 'DIGEST_MISMATCH');
  t.regex((error as Error).message, /is corrupt/);
  const tags = await fetch(`http://${plain.hostPort}/v2/corrupt/test/tags/list`);
  t.is(tags.status, 404);
  await tags.body?.cancel();
});

test('image.pulled: one per pull (an index with --all, a mirror), none when the pull fails', async (t) => {
  const bus = new EventBus();
  const pulled: string[] = [];
  bus.on('image.pulled', (event) => pulled.push(event.ref));
  const client = new RegistryClient(plain.hostPort);
  const entry = { mediaType: MediaType.dockerManifest, digest: image.digest, size: image.manifest.bytes.byteLength };
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MediaType.dockerManifestList,
      manifests: [
        { ...entry, platform: { architecture: 'amd64', os: 'linux' } },
        { ...entry, platform: { architecture: 's390x', os: 'linux' } },
      ],
    }),
  );
  const indexDigest = await client.putManifest('os/test', 'events', index, MediaType.dockerManifestList);
  await copyImage(`${plain.hostPort}/os/test:events`, `${embedded.address}/events/all:latest`, { all: true, bus });
  t.deepEqual(pulled, [`${embedded.address}/events/all@${indexDigest}`]);
  await mirrorOscontainer(`${plain.hostPort}/os/test:v2`, `${embedded.address}/events/mirror:v2`, { bus });
  t.deepEqual(pulled.slice(1), [`${embedded.address}/events/mirror@${image.digest}`]);
  const error = await t.throwsAsync(
    copyImage(`${plain.hostPort}/os/test:no-such-tag`, `${embedded.address}/events/none:latest`, { bus }),
  );
  t.is((error as { code?: string }).code, 'NOT_FOUND');
  t.is(pulled.length, 2);
});
