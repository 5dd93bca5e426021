/**
 * A client that joins a blob flight in the instant between "renamed into the pool" and "done" (the flight is
 * linking the blob into its repository) must get the verified blob, not an error: seen in CI as a 500 for a small
 * config blob when three skopeo copies pulled through at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import test from 'ava';
import { BlobFlight } from '../../src/registry/pull-through/blob-flight.js';
import { streamFlight } from '../../src/registry/pull-through/flight-reader.js';
import { RegistryStore } from '../../src/registry/store.js';
import { tempDir } from '../helpers/temp.js';

/** A response that collects what it is sent. */
function collector(): { res: ServerResponse; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  const res = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  return { res: res as unknown as ServerResponse, bytes: () => Buffer.concat(chunks) };
}

/** A real flight of `content` (one chunk) claiming `digest`, as PullThrough starts one for an upstream body. */
async function startFlight(store: RegistryStore, digest: string, content: Buffer): Promise<BlobFlight> {
  const temp = store.layout.temp();
  const handle = await open(temp, 'wx');
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(content);
      controller.close();
    },
  });
  return new BlobFlight(digest, content.length, temp, store.layout.blob(digest), store, 'ns/os', body, handle);
}

test('a reader that opens the flight while it links the renamed blob waits for the end and reads the pool', async (t) => {
  const store = await RegistryStore.open(tempDir('devpivot-flight-', t));
  const content = randomBytes(4096);
  const digest = `sha256:${createHash('sha256').update(content).digest('hex')}`;
  // Hold the flight between the rename and `done`.
  let entered!: () => void;
  const linking = new Promise<void>((resolve) => {
    entered = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const link = store.repositories.linkBlob.bind(store.repositories);
  store.repositories.linkBlob = async (repo, d) => {
    entered();
    await released;
    return link(repo, d);
  };
  const flight = await startFlight(store, digest, content);
  await linking;
  t.is(flight.state, 'running', 'the blob is in the pool, the flight not yet done');
  const { res, bytes } = collector();
  const streaming = streamFlight(flight, res, () => {});
  setTimeout(release, 50);
  t.is(await streaming, content.length);
  t.is(flight.state, 'done');
  t.deepEqual(bytes(), content);
});

test('a reader that finds the temp file gone after a failed flight gets the flight’s error', async (t) => {
  const store = await RegistryStore.open(tempDir('devpivot-flight-', t));
  const content = randomBytes(4096);
  const wrong = `sha256:${'0'.repeat(64)}`;
  const flight = await startFlight(store, wrong, content);
  await flight.finished;
  const { res } = collector();
  const error = await t.throwsAsync(streamFlight(flight, res, () => {}));
  t.is((error as { code?: string }).code, 'DIGEST_INVALID');
});
