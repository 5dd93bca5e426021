import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import test from 'ava';
import { execa } from 'execa';
import { parseReference } from '../../src/oci/reference.js';
import { rechunk } from '../../src/oscontainer/operations/upload.js';
import { parallelGzip } from '../../src/oscontainer/parallel-gzip.js';
import { parseChallenge } from '../../src/oscontainer/transport/challenge.js';
import { findCredentials } from '../../src/oscontainer/transport/credentials.js';
import { isLoopback } from '../../src/oscontainer/transport/scheme.js';

test('parseReference: host:port, tags, digests and Docker Hub defaults', (t) => {
  t.deepEqual(parseReference('127.0.0.1:5000/os/rhcos:v2'), {
    registry: '127.0.0.1:5000',
    repository: 'os/rhcos',
    tag: 'v2',
  });
  const digest = `sha256:${'a'.repeat(64)}`;
  t.deepEqual(parseReference(`docker://quay.io/org/os@${digest}`), {
    registry: 'quay.io',
    repository: 'org/os',
    digest,
  });
  t.deepEqual(parseReference('fedora'), { registry: 'docker.io', repository: 'library/fedora', tag: 'latest' });
  t.deepEqual(parseReference('localhost/x:1'), { registry: 'localhost', repository: 'x', tag: '1' });
  const error = t.throws(() => parseReference('127.0.0.1:5000/Bad/Name'));
  t.is((error as { code?: string }).code, 'BAD_REFERENCE');
  t.throws(() => parseReference('host:5000/os@sha256'));
  t.true(isLoopback('127.0.0.1:5000'));
  t.true(isLoopback('localhost:80'));
  t.true(isLoopback('[::1]:5000'));
  t.false(isLoopback('10.0.2.2:5000'));
});

test('parseChallenge reads Bearer and Basic challenges', (t) => {
  t.deepEqual(
    parseChallenge('Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull"'),
    {
      scheme: 'bearer',
      params: { realm: 'https://auth.example/token', service: 'registry.example', scope: 'repository:a/b:pull' },
    },
  );
  t.deepEqual(parseChallenge('Basic realm="x"'), { scheme: 'basic', params: { realm: 'x' } });
});

test('findCredentials: file order, most specific key, docker config key forms', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-auth-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  await mkdir(join(dir, 'run', 'containers'), { recursive: true });
  await mkdir(join(dir, 'docker'), { recursive: true });
  await writeFile(
    join(dir, 'run', 'containers', 'auth.json'),
    JSON.stringify({ auths: { 'reg:5000': { auth: b64('host:h') }, 'reg:5000/team': { auth: b64('team:t') } } }),
  );
  await writeFile(
    join(dir, 'docker', 'config.json'),
    JSON.stringify({
      auths: { 'https://index.docker.io/v1/': { auth: b64('hub:p:with:colons') }, 'other:1': { auth: b64('o:o') } },
    }),
  );
  const env = { HOME: dir, XDG_RUNTIME_DIR: join(dir, 'run'), DOCKER_CONFIG: join(dir, 'docker') };
  t.deepEqual(await findCredentials('reg:5000', 'team/os', env), { username: 'team', password: 't' });
  t.deepEqual(await findCredentials('reg:5000', 'other/os', env), { username: 'host', password: 'h' });
  t.deepEqual(await findCredentials('docker.io', 'library/fedora', env), {
    username: 'hub',
    password: 'p:with:colons',
  });
  t.deepEqual(await findCredentials('other:1', 'x', env), { username: 'o', password: 'o' });
  t.is(await findCredentials('nowhere:1', 'x', env), null);
  // REGISTRY_AUTH_FILE comes first.
  await writeFile(join(dir, 'first.json'), JSON.stringify({ auths: { 'reg:5000': { auth: b64('first:f') } } }));
  t.deepEqual(await findCredentials('reg:5000', 'team/os', { ...env, REGISTRY_AUTH_FILE: join(dir, 'first.json') }), {
    username: 'first',
    password: 'f',
  });
  await writeFile(join(dir, 'broken.json'), '{not json');
  const error = await t.throwsAsync(
    findCredentials('reg:5000', 'x', { ...env, REGISTRY_AUTH_FILE: join(dir, 'broken.json') }),
  );
  t.is((error as { code?: string }).code, 'AUTH_FILE_INVALID');
});

async function gzipAll(data: Buffer, options: Parameters<typeof parallelGzip>[1]): Promise<Buffer> {
  async function* pieces() {
    // Uneven input pieces: the output must not depend on how the input arrives.
    for (let i = 0, n = 1; i < data.length; i += n, n = (n * 7 + 3) % 70_000) yield data.subarray(i, i + n);
  }
  const out: Buffer[] = [];
  for await (const chunk of parallelGzip(pieces(), options)) out.push(chunk);
  return Buffer.concat(out);
}

test('parallelGzip: one valid gzip member, identical bytes for any worker count, gzip(1) agrees', async (t) => {
  const data = Buffer.concat([randomBytes(400_000), Buffer.alloc(500_000, 'devpivot '), randomBytes(10)]);
  const one = await gzipAll(data, { workers: 1, chunkSize: 128 * 1024 });
  const two = await gzipAll(data, { workers: 2, chunkSize: 128 * 1024 });
  t.true(one.equals(two));
  t.true(gunzipSync(one).equals(data));
  t.true(one.length < data.length * 0.5);
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-gz-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'x.gz'), one);
  await execa('gzip', ['-t', join(dir, 'x.gz')]);
  // stripFinalNewline off: execa strips a last 0x0a byte by default, which the random tail ends in once in 256 runs
  const { stdout } = await execa('gzip', ['-dc', join(dir, 'x.gz')], { encoding: 'buffer', stripFinalNewline: false });
  t.true(Buffer.from(stdout).equals(data));
  t.true(gunzipSync(await gzipAll(Buffer.alloc(0), { workers: 2 })).equals(Buffer.alloc(0)));
});

test('rechunk cuts a stream into exact sizes', async (t) => {
  async function* source() {
    yield Buffer.alloc(5, 1);
    yield Buffer.alloc(12, 2);
    yield Buffer.alloc(1, 3);
  }
  const sizes: number[] = [];
  for await (const chunk of rechunk(source(), 8)) sizes.push(chunk.byteLength);
  t.deepEqual(sizes, [8, 8, 2]);
});
