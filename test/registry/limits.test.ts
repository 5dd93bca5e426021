/**
 * The registry's limits (issue 28 item 4), with real curl over loopback: a maximum blob size (monolithic and
 * chunked), a cap on open upload sessions, a free-space check, header and request timeouts, a connection cap.
 * Every refusal is the distribution error body with its status.
 */
import { randomBytes } from 'node:crypto';
import { statfs, truncate, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { curl, digestOf, startTestRegistry, tempDir } from './helpers.js';

const MiB = 1024 * 1024;

function code(body: string): string | undefined {
  return (JSON.parse(body) as { errors: { code: string }[] }).errors[0]?.code;
}

async function file(bytes: Buffer | number): Promise<string> {
  const path = join(await tempDir('devpivot-limits-'), 'blob');
  if (typeof bytes === 'number') {
    await writeFile(path, '');
    await truncate(path, bytes); // sparse: never read when the registry refuses before the body
  } else await writeFile(path, bytes);
  return path;
}

/** A monolithic upload (POST ?digest=) of the bytes of `bytes` (or a sparse file of that many), streamed by curl. */
async function pushMonolithic(url: string, bytes: Buffer | number, digest: string) {
  return curl(['-X', 'POST', '-T', await file(bytes), `${url}/v2/lim/os/blobs/uploads?digest=${digest}`]);
}

async function session(url: string, repo: string): Promise<string> {
  const started = await curl(['-X', 'POST', `${url}/v2/${repo}/blobs/uploads/`]);
  if (started.status !== 202) throw new Error(`POST gave ${started.status}: ${started.body}`);
  return `${url}${started.headers.location}`;
}

test('a blob over the maximum size is 413 SIZE_INVALID: monolithic, chunked PATCH, and across chunks', async (t) => {
  const r = await startTestRegistry({ limits: { maxBlobBytes: MiB } });
  t.teardown(() => r.close());
  const big = randomBytes(2 * MiB);
  const path = await file(big);
  const mono = await curl(['-X', 'POST', '-T', path, `${r.url}/v2/lim/os/blobs/uploads?digest=${digestOf(big)}`]);
  t.is(mono.status, 413, mono.raw);
  t.is(code(mono.body), 'SIZE_INVALID');
  t.false(await r.registry.store.hasBlob(digestOf(big)));

  // A chunked PATCH declares no length: refused once the bytes pass the maximum.
  const chunked = await curl([
    '-X',
    'PATCH',
    '-H',
    'Transfer-Encoding: chunked',
    '-T',
    path,
    await session(r.url, 'lim/os'),
  ]);
  t.is(chunked.status, 413, chunked.raw);
  t.is(code(chunked.body), 'SIZE_INVALID');

  // Chunks that each fit but together pass it.
  const location = await session(r.url, 'lim/os');
  const part = await file(randomBytes(600 * 1024));
  t.is((await curl(['-X', 'PATCH', '-T', part, location])).status, 202);
  const second = await curl(['-X', 'PATCH', '-T', part, location]);
  t.is(second.status, 413, second.raw);
  t.is(code(second.body), 'SIZE_INVALID');

  // Under the limit is accepted.
  const small = randomBytes(100 * 1024);
  const ok = await pushMonolithic(r.url, small, digestOf(small));
  t.is(ok.status, 201, ok.raw);
});

test('open upload sessions are capped: the next POST is 429 TOOMANYREQUESTS until one ends', async (t) => {
  const r = await startTestRegistry({ limits: { maxUploadSessions: 2 } });
  t.teardown(() => r.close());
  const first = await session(r.url, 'lim/os');
  await session(r.url, 'lim/os');
  const third = await curl(['-X', 'POST', `${r.url}/v2/lim/os/blobs/uploads/`]);
  t.is(third.status, 429, third.raw);
  t.is(code(third.body), 'TOOMANYREQUESTS');
  t.is((await curl(['-X', 'DELETE', first])).status, 204);
  t.is((await curl(['-X', 'POST', `${r.url}/v2/lim/os/blobs/uploads/`])).status, 202);
});

test('a blob that would leave less than the free-space reserve is 507 before its body is read (statfs)', async (t) => {
  const storage = await tempDir();
  const fs = await statfs(storage);
  const free = fs.bavail * fs.bsize;
  // Room for a small blob, not for a 2 GiB one (a sparse file: curl waits for 100-continue and never sends it).
  const r = await startTestRegistry({ limits: { minFreeBytes: Math.max(0, free - 1024 * MiB) } });
  t.teardown(() => r.close());
  const small = randomBytes(4096);
  const ok = await pushMonolithic(r.url, small, digestOf(small));
  t.is(ok.status, 201, ok.raw);
  const huge = await pushMonolithic(r.url, 2048 * MiB, `sha256:${'0'.repeat(64)}`);
  t.is(huge.status, 507, huge.raw);
  t.is(code(huge.body), 'UNAVAILABLE');
  const patch = await curl(['-X', 'PATCH', '-T', await file(2048 * MiB), await session(r.url, 'lim/os')]);
  t.is(patch.status, 507, patch.raw);
});

function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString();
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

test('headers that never finish are answered 408 with the error body (headers timeout)', async (t) => {
  const r = await startTestRegistry({ limits: { headersTimeoutMs: 500 } });
  t.teardown(() => r.close());
  const started = Date.now();
  const answer = await rawRequest(r.registry.port, 'GET /v2/ HTTP/1.1\r\nHost: x\r\nX-Slow: ');
  t.regex(answer, /^HTTP\/1\.1 408 /);
  t.is(code(answer.slice(answer.indexOf('\r\n\r\n') + 4)), 'UNAVAILABLE');
  t.true(Date.now() - started < 10_000);
});

test('headers over the size limit are answered 431 with the error body, not 400 malformed', async (t) => {
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  const big = await curl(['-H', `X-Big: ${'a'.repeat(20 * 1024)}`, `${r.url}/v2/`]);
  t.is(big.status, 431, big.raw);
  t.is(code(big.body), 'UNSUPPORTED');
  t.is((await curl([`${r.url}/v2/`])).status, 200);
});

test('a body sent too slowly is cut with 408 and the error body (request timeout)', async (t) => {
  const r = await startTestRegistry({ limits: { requestTimeoutMs: 1000, headersTimeoutMs: 1000 } });
  t.teardown(() => r.close());
  const location = await session(r.url, 'lim/os');
  const slow = await curl(['-X', 'PATCH', '--limit-rate', '20K', '-T', await file(randomBytes(400 * 1024)), location]);
  t.is(slow.status, 408, slow.raw);
  t.is(code(slow.body), 'UNAVAILABLE');
});

test('connections over the cap are answered 503 UNAVAILABLE; under it again, served', async (t) => {
  const r = await startTestRegistry({ limits: { maxConnections: 2 } });
  t.teardown(() => r.close());
  const idle: Socket[] = [];
  for (let i = 0; i < 2; i++)
    idle.push(
      await new Promise<Socket>((resolve) => {
        const socket = connect(r.registry.port, '127.0.0.1', () => resolve(socket));
      }),
    );
  const refused = await curl([`${r.url}/v2/`]);
  t.is(refused.status, 503, refused.raw);
  t.is(code(refused.body), 'UNAVAILABLE');
  for (const socket of idle) socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.is((await curl([`${r.url}/v2/`])).status, 200);
});
