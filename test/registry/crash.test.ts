/**
 * Crash safety and concurrency: the real CLI server killed with SIGKILL in the middle of a large upload never
 * leaves a truncated blob behind; concurrent pushes of the same content end in one consistent blob.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import test from 'ava';
import { RegistryStore } from '../../src/registry/store.js';
import { binPath } from '../helpers/cli.js';
import { makeImage, run, startTestRegistry, tempDir, writeOciLayout } from './helpers.js';

const MiB = 1024 * 1024;
const TOTAL_MIB = 200;

/** A deterministic 200 MiB stream: one random MiB, stamped with its index (never all in memory). */
function bigContent(): { chunks: () => Generator<Buffer>; digest: string } {
  const base = randomBytes(MiB);
  const chunks = function* () {
    for (let i = 0; i < TOTAL_MIB; i++) {
      const chunk = Buffer.from(base);
      chunk.writeUInt32BE(i, 0);
      yield chunk;
    }
  };
  const hash = createHash('sha256');
  for (const chunk of chunks()) hash.update(chunk);
  return { chunks, digest: `sha256:${hash.digest('hex')}` };
}

async function serve(storage: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [binPath, 'registry', 'serve', '--port', '0', '--quiet', '--storage', storage],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${out} ${err}`)), 15_000);
    child.stderr!.on('data', (d: Buffer) => (err += d));
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
  return { child, url };
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });
}

async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) found.push(join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name));
  return found;
}

test.serial('kill -9 during a slow 200 MiB PUT: blob absent after restart, next push succeeds', async (t) => {
  t.timeout(90_000);
  const storage = await tempDir();
  const content = bigContent();
  const first = await serve(storage);
  try {
    // Slow monolithic upload: 1 MiB every 20 ms; kill the server once 60 MiB are on their way.
    const url = new URL(`/v2/crash/big/blobs/uploads/?digest=${content.digest}`, first.url);
    const upload = request(url, {
      method: 'POST',
      headers: { 'Content-Length': TOTAL_MIB * MiB, 'Content-Type': 'application/octet-stream' },
    });
    const outcome = new Promise<string>((resolve) => {
      upload.on('error', (error) => resolve(`error: ${error.message}`));
      upload.on('response', (response) => resolve(`status ${response.statusCode}`));
    });
    let sent = 0;
    for (const chunk of content.chunks()) {
      if (!upload.write(chunk)) await new Promise((resolve) => upload.once('drain', resolve));
      sent++;
      if (sent === 60) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The partial data really is on disk, in a temp file.
    const partial = await filesUnder(join(storage, 'tmp'));
    t.is(partial.length, 1);
    t.true((await stat(partial[0]!)).size > 10 * MiB);
    first.child.kill('SIGKILL');
    await killed(first.child);
    t.regex(await outcome, /error/);
    upload.destroy();
  } finally {
    first.child.kill('SIGKILL');
  }

  const second = await serve(storage);
  try {
    t.deepEqual(await filesUnder(join(storage, 'tmp')), [], 'temp files are removed at start');
    t.deepEqual(await filesUnder(join(storage, 'blobs')), [], 'no truncated blob');
    const head = await fetch(`${second.url}/v2/crash/big/blobs/${content.digest}`, { method: 'HEAD' });
    t.is(head.status, 404);
    const put = await fetch(`${second.url}/v2/crash/big/blobs/uploads/?digest=${content.digest}`, {
      method: 'POST',
      body: Readable.toWeb(Readable.from(content.chunks())) as ReadableStream,
      duplex: 'half',
      headers: { 'Content-Type': 'application/octet-stream' },
    } as RequestInit);
    t.is(put.status, 201);
    const got = await fetch(`${second.url}/v2/crash/big/blobs/${content.digest}`);
    const hash = createHash('sha256');
    for await (const chunk of got.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
    t.is(`sha256:${hash.digest('hex')}`, content.digest);
  } finally {
    second.child.kill('SIGTERM');
    await killed(second.child);
    await rm(storage, { recursive: true, force: true });
  }
});

test.serial('SIGTERM stops "registry serve" cleanly', async (t) => {
  const storage = await tempDir();
  const { child } = await serve(storage);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  t.is(code, 0);
  t.regex(out, /registry stopped/);
  await rm(storage, { recursive: true, force: true });
});

test.serial('eight concurrent skopeo pushes of the same image succeed and leave one copy of each blob', async (t) => {
  t.timeout(90_000);
  const r = await startTestRegistry();
  const work = await tempDir();
  try {
    const image = makeImage([3_000_000, 2_000_000, 500_000]);
    await writeOciLayout(work, image.manifest, [image.config, ...image.layers], 'same');
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        run('skopeo', [
          '--insecure-policy',
          'copy',
          '--dest-tls-verify=false',
          `oci:${work}:same`,
          `docker://${r.host}/crash/concurrent:same`,
        ]),
      ),
    );
    for (const result of results) t.is(result.code, 0, result.stderr);
    const blobs = (await filesUnder(join(r.storage, 'blobs'))).map((path) => `sha256:${path.split('/').at(-1)}`);
    const expected = [image.manifest, image.config, ...image.layers].map((b) => b.digest);
    t.deepEqual(blobs.sort(), expected.sort());
    for (const b of [image.config, ...image.layers]) {
      const got = await fetch(`${r.url}/v2/crash/concurrent/blobs/${b.digest}`);
      t.is(
        createHash('sha256')
          .update(Buffer.from(await got.arrayBuffer()))
          .digest('hex'),
        b.digest.slice(7),
      );
    }
    t.deepEqual(await filesUnder(join(r.storage, 'tmp')), []);
  } finally {
    await r.close();
    await rm(work, { recursive: true, force: true });
  }
});

test.serial(
  'store: eight concurrent putBlob of the same stream give one blob; a bad digest leaves nothing',
  async (t) => {
    const storage = await tempDir();
    try {
      const store = await RegistryStore.open(storage);
      const bytes = randomBytes(8 * MiB);
      const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
      const chunked = () => Readable.from(Array.from({ length: 8 }, (_, i) => bytes.subarray(i * MiB, (i + 1) * MiB)));
      const results = await Promise.all(Array.from({ length: 8 }, () => store.putBlob(chunked(), digest)));
      for (const result of results) t.deepEqual(result, { digest, size: bytes.length });
      t.is((await filesUnder(join(storage, 'blobs'))).length, 1);
      const error = await t.throwsAsync(store.putBlob(randomBytes(100), digest));
      t.is((error as { code?: string }).code, 'DIGEST_INVALID');
      t.is((await filesUnder(join(storage, 'blobs'))).length, 1);
      t.deepEqual(await filesUnder(join(storage, 'tmp')), []);
    } finally {
      await rm(storage, { recursive: true, force: true });
    }
  },
);
