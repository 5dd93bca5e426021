/**
 * Real clients against the registry with TLS and auth on (registry/tls.ts, registry/auth.ts): skopeo, podman and
 * curl told the CA (`--cert-dir`, `--cacert`) and the pull secret (`--authfile`, `-u`) round-trip an image; told
 * nothing, or another CA, or no credentials, each fails with its own TLS or 401 message. devpivot's own transport
 * reaches it once the process trusts it (transport/trusted.ts).
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import test from 'ava';
import { RegistryClient } from '../../src/oscontainer/registry-client.js';
import { caFetch } from '../../src/oscontainer/transport/ca-fetch.js';
import { trustRegistry } from '../../src/oscontainer/transport/trusted.js';
import { makeCa } from '../../src/registry/tls.js';
import {
  digestOf,
  type Image,
  makeImage,
  OCI_CONFIG,
  OCI_LAYER_GZIP,
  OCI_MANIFEST,
  run,
  startTestRegistry,
  type TestRegistry,
  tempDir,
  writeOciLayout,
} from './helpers.js';

let r: TestRegistry;
let work: string;
let secure: NonNullable<TestRegistry['secure']>;
/** An auth file without an entry for the registry: the client sends no credentials. */
let noSecret: string;
const image = makeImage([150_000, 20_000]);
test.before(async () => {
  r = await startTestRegistry({ secure: true });
  secure = r.secure!;
  work = await tempDir('devpivot-secure-clients-');
  noSecret = join(work, 'none.json');
  await writeFile(noSecret, '{"auths": {}}\n');
  const push = await pushLayout(image, 'layout', `docker://${r.host}/secure/os:v1`);
  if (push.code !== 0) throw new Error(`skopeo push: ${push.stderr}`);
});

/** skopeo copy of `pushed` (an OCI layout written for it) to `target`, told the CA and the pull secret. */
async function pushLayout(pushed: Image, name: string, target: string) {
  const layout = join(work, name);
  await writeOciLayout(layout, pushed.manifest, [pushed.config, ...pushed.layers], 'v1');
  const { certDir, authFile } = secure;
  const args = ['--dest-cert-dir', certDir, '--dest-authfile', authFile, `oci:${layout}:v1`, target];
  return run('skopeo', ['--insecure-policy', 'copy', ...args]);
}
test.after.always(async () => {
  await r?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

const ref = () => `docker://${r.host}/secure/os@${image.manifest.digest}`;

test('the registry serves HTTPS only, with credentials required on /v2/ (a Basic challenge)', async (t) => {
  t.true(r.url.startsWith('https://'));
  const listening = r.events.find((e) => e.kind === 'registry.listening');
  t.is(listening && 'ca' in listening ? listening.ca : undefined, secure.caFile, 'registry.listening names the CA');
  const plain = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', `http://${r.host}/v2/`]);
  t.not(plain.stdout, '200', 'plain HTTP on the TLS port gets no registry answer');
  const anonymous = await run('curl', ['-s', '-i', '--cacert', secure.caFile, `${r.url}/v2/`]);
  t.regex(anonymous.stdout, /^HTTP\/1\.1 401/);
  t.regex(anonymous.stdout, /www-authenticate: Basic realm="devpivot registry"/i);
  t.regex(anonymous.stdout, /"code":"UNAUTHORIZED"/);
});

test('curl: with --cacert and -u it fetches the manifest; without the CA it fails verification (exit 60)', async (t) => {
  const { username, password } = secure.credentials;
  const ok = await run('curl', [
    '-sf',
    '--cacert',
    secure.caFile,
    '-u',
    `${username}:${password}`,
    '-H',
    `Accept: ${image.manifest.mediaType}`,
    `${r.url}/v2/secure/os/manifests/v1`,
  ]);
  t.is(ok.code, 0, ok.stderr);
  t.is(digestOf(ok.stdout), image.manifest.digest);
  const noCa = await run('curl', ['-sS', '-u', `${username}:${password}`, `${r.url}/v2/`]);
  t.is(noCa.code, 60);
  t.regex(noCa.stderr, /SSL certificate problem: unable to get local issuer certificate/);
  const wrongUser = await run('curl', [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '--cacert',
    secure.caFile,
    '-u',
    'devpivot:wrong',
    `${r.url}/v2/`,
  ]);
  t.is(wrongUser.stdout, '401');
});

test('skopeo: told the CA and the auth file it copies by digest; another CA or no auth file fail with its own errors', async (t) => {
  const out = join(work, 'dir-back');
  const ok = await run('skopeo', [
    '--insecure-policy',
    'copy',
    '--src-cert-dir',
    secure.certDir,
    '--src-authfile',
    secure.authFile,
    ref(),
    `dir:${out}`,
  ]);
  t.is(ok.code, 0, ok.stderr);
  t.is(digestOf(await readFile(join(out, 'manifest.json'))), image.manifest.digest);

  const otherDir = join(work, 'other');
  await makeCa(otherDir, 'another CA');
  const wrongCa = await run('skopeo', [
    'inspect',
    '--raw',
    '--cert-dir',
    otherDir,
    '--authfile',
    secure.authFile,
    ref(),
  ]);
  t.not(wrongCa.code, 0);
  t.regex(wrongCa.stderr, /x509: certificate signed by unknown authority/);

  const noAuth = await run('skopeo', ['inspect', '--raw', '--cert-dir', secure.certDir, '--authfile', noSecret, ref()]);
  t.not(noAuth.code, 0);
  t.regex(noAuth.stderr, /authentication required|unauthorized/i);
});

/** An image podman can unpack: one gzip tar layer (made by tar) holding one file. */
async function tarImage(): Promise<Image> {
  const tree = join(work, 'tree');
  await mkdir(tree, { recursive: true });
  await writeFile(join(tree, 'hello'), `secure ${Date.now()}\n`);
  const tar = await run('tar', ['-cf', join(work, 'layer.tar'), '-C', tree, '.']);
  if (tar.code !== 0) throw new Error(tar.stderr);
  const raw = await readFile(join(work, 'layer.tar'));
  const blob = (bytes: Buffer, mediaType: string) => ({
    digest: digestOf(bytes),
    size: bytes.length,
    bytes,
    mediaType,
  });
  const layer = blob(gzipSync(raw), OCI_LAYER_GZIP);
  const config = blob(
    Buffer.from(
      JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [digestOf(raw)] } }),
    ),
    OCI_CONFIG,
  );
  const descriptor = (b: typeof layer) => ({ mediaType: b.mediaType, digest: b.digest, size: b.size });
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: descriptor(config),
        layers: [descriptor(layer)],
      }),
    ),
    OCI_MANIFEST,
  );
  return { config, layers: [layer], manifest };
}

test('podman: pull with --cert-dir and --authfile into its own storage; without the auth file it is refused', async (t) => {
  const unpackable = await tarImage();
  const target = `docker://${r.host}/secure/podman:tar`;
  const push = await pushLayout(unpackable, 'layout-tar', target);
  t.is(push.code, 0, push.stderr);
  const root = join(work, 'podman');
  const base = ['--root', join(root, 'root'), '--runroot', join(root, 'run'), '--storage-driver', 'vfs'];
  const ok = await run(
    'podman',
    [...base, 'pull', '-q', '--cert-dir', secure.certDir, '--authfile', secure.authFile, target],
    120_000,
  );
  t.is(ok.code, 0, ok.stderr);
  const inspect = await run('podman', [
    ...base,
    'image',
    'inspect',
    '--format',
    '{{.Digest}}',
    target.slice('docker://'.length),
  ]);
  t.is(inspect.stdout.trim(), unpackable.manifest.digest);
  const refused = await run(
    'podman',
    [...base, 'pull', '-q', '--cert-dir', secure.certDir, '--authfile', noSecret, `docker://${r.host}/secure/os:v1`],
    120_000,
  );
  t.not(refused.code, 0);
  t.regex(refused.stderr, /authentication required|unauthorized/i);
  await run('podman', [...base, 'rmi', '-af']);
});

test("devpivot's transport: a trusted address is spoken to over HTTPS with the CA and the credentials", async (t) => {
  const untrusted = new RegistryClient(r.host, { credentials: null });
  t.true(untrusted.baseUrl.startsWith('http://'), 'a loopback registry nobody declared is plain HTTP');
  const untrust = trustRegistry([r.host], {
    caPem: await readFile(secure.caFile, 'utf8'),
    credentials: secure.credentials,
  });
  try {
    const client = new RegistryClient(r.host, { env: {} });
    t.is(client.baseUrl, `https://${r.host}`);
    const fetched = await client.getManifest('secure/os', 'v1');
    t.is(fetched.digest, image.manifest.digest);
    const config = await client.getBlob('secure/os', image.config.digest);
    t.is(digestOf(config), image.config.digest);
  } finally {
    untrust();
  }
  const withoutCredentials = trustRegistry([r.host], { caPem: await readFile(secure.caFile, 'utf8') });
  try {
    const error = await t.throwsAsync(
      new RegistryClient(r.host, { env: {}, credentials: null }).getManifest('secure/os', 'v1'),
    );
    t.is((error as { code?: string }).code, 'REGISTRY_AUTH_FAILED');
  } finally {
    withoutCredentials();
  }
});

test('a push without credentials is refused 401 and stores nothing; the node ports ask for them too', async (t) => {
  const viaCa = caFetch(await readFile(secure.caFile, 'utf8'));
  const blob = Buffer.from(`not stored ${Date.now()}`);
  const digest = digestOf(blob);
  const upload = await viaCa(`${r.url}/v2/secure/anon/blobs/uploads/?digest=${digest}`, { method: 'POST', body: blob });
  t.is(upload.status, 401);
  t.is(upload.headers.get('www-authenticate'), 'Basic realm="devpivot registry"');
  t.is(upload.headers.get('connection'), 'close');
  await upload.body?.cancel();
  const { username, password } = secure.credentials;
  const authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const head = await viaCa(`${r.url}/v2/secure/anon/blobs/${digest}`, { method: 'HEAD', headers: { authorization } });
  t.is(head.status, 404, 'the refused upload stored nothing');
  const nodePort = await r.registry.addNodePort('node-x');
  const node = await viaCa(`https://127.0.0.1:${nodePort}/v2/`);
  t.is(node.status, 401);
  const nodeOk = await viaCa(`https://127.0.0.1:${nodePort}/v2/`, { headers: { authorization } });
  t.is(nodeOk.status, 200);
});
