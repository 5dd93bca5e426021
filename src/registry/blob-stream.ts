import type { FileHandle } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Fault injection the engine toggles at run time (mutate the object; every blob response reads it per chunk):
 * - `slowBytesPerSecond`: throttle each blob GET body to about this rate (undefined or 0 = full speed).
 * - `corruptBlobs`: GET of *layer* blobs (never manifests or configs) serves content with flipped bytes but the
 *   same length, so clients fail digest verification as with a corrupted image on a real registry.
 * - `corruptBlobsFor`: the same, only for requests on these nodes' own ports (one node's mirror is corrupt, the
 *   others' are not).
 */
export interface RegistryFaults {
  slowBytesPerSecond?: number;
  corruptBlobs?: boolean;
  corruptBlobsFor?: Set<string>;
}

/** Whether `corruptBlobs` or `corruptBlobsFor` applies to a request made by `node` (undefined: the main port). */
export function corruptsFor(faults: RegistryFaults, node: string | undefined): boolean {
  return faults.corruptBlobs === true || (node !== undefined && faults.corruptBlobsFor?.has(node) === true);
}

/** How often a blob response reports progress (plus one final report at the end). */
export const PROGRESS_INTERVAL_MS = 250;
/** Read size: large reads keep syscalls and event-loop turns per byte low (measured: 2 MiB beats a 64 KiB pipe). */
const CHUNK = 2 * 1024 * 1024;

/** Resolves once `res` can take more (or closed): the back-pressure wait of every blob response. */
export function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Write a chunk with backpressure. Resolves once the socket accepted more data; the returned `flushed` settles
 * when this chunk left our buffer (so the buffer can be reused).
 */
async function write(res: ServerResponse, chunk: Buffer): Promise<{ flushed: Promise<void> }> {
  if (res.destroyed) throw new Error('client closed the connection');
  let flushed!: Promise<void>;
  const more = new Promise<boolean>((resolveMore) => {
    flushed = new Promise<void>((resolve) => {
      const onClose = () => resolve();
      res.once('close', onClose);
      resolveMore(
        res.write(chunk, () => {
          res.off('close', onClose);
          resolve();
        }),
      );
    });
  });
  if (!(await more)) await drained(res);
  if (res.destroyed) throw new Error('client closed the connection');
  return { flushed };
}

export interface SendBlobOptions {
  faults: RegistryFaults;
  /** Flip bytes (the caller decides: only layers are corrupted). */
  corrupt: boolean;
  /** Called at most every PROGRESS_INTERVAL_MS, and once with `final` at the end. */
  onProgress(sent: number, final: boolean): void;
  /** Called after every write with the bytes sent so far (what a cut transfer had sent). */
  onSent?(sent: number): void;
}

/**
 * Stream `length` bytes of an open blob from `start` into `res` (headers already set), holding at most two
 * chunks: a read loop writing straight to the socket, with backpressure, progress and the faults applied.
 * Resolves with the bytes sent; rejects when the client goes away.
 */
export async function sendBlob(
  handle: FileHandle,
  start: number,
  length: number,
  res: ServerResponse,
  options: SendBlobOptions,
): Promise<number> {
  const { faults, corrupt, onProgress, onSent } = options;
  let sent = 0;
  let lastReport = Date.now();
  const count = (bytes: number) => {
    sent += bytes;
    onSent?.(sent);
    // The final report goes out with the last byte: a Content-Length client is done reading right then.
    if (sent === length) return onProgress(sent, true);
    const now = Date.now();
    if (now - lastReport >= PROGRESS_INTERVAL_MS) {
      lastReport = now;
      onProgress(sent, false);
    }
  };
  let position = start;
  const end = start + length;
  // Two buffers used in turn: one is read into while the other drains to the socket. Reusing them (instead of
  // a fresh allocation per chunk) spares the kernel page faults on every megabyte sent.
  const size = Math.min(CHUNK, length);
  const buffers = [Buffer.allocUnsafeSlow(size), Buffer.allocUnsafeSlow(size)];
  const pending: Promise<void>[] = [Promise.resolve(), Promise.resolve()];
  for (let turn = 0; position < end; turn ^= 1) {
    await pending[turn];
    const buffer = buffers[turn]!;
    const { bytesRead } = await handle.read(buffer, 0, Math.min(size, end - position), position);
    if (bytesRead === 0) throw new Error(`blob ended at ${position}, before its size`);
    const chunk = buffer.subarray(0, bytesRead);
    position += bytesRead;
    if (corrupt) {
      const at = chunk.length >> 1;
      chunk[at] = chunk[at]! ^ 0xff;
    }
    for (let offset = 0; offset < chunk.length; ) {
      const rate = faults.slowBytesPerSecond ?? 0;
      // Throttled: slices of ~1/20 s so the rate is smooth and a change of the fault applies quickly.
      const slice = rate > 0 ? Math.max(1, Math.floor(rate / 20)) : chunk.length;
      const part = chunk.subarray(offset, offset + slice);
      offset += part.length;
      pending[turn] = (await write(res, part)).flushed;
      count(part.length);
      if (rate > 0) await sleep((part.length / rate) * 1000);
    }
  }
  await new Promise<void>((resolve) => res.end(resolve));
  return sent;
}
