/**
 * pigz-style parallel gzip: the input is cut into fixed-size chunks, each compressed as raw deflate in a worker
 * thread (primed with the previous chunk's last 32 KiB as dictionary), and the pieces are joined into ONE gzip
 * member (RFC 1952) whose CRC-32 and size are computed here. Chunk boundaries depend only on the input bytes, so
 * the output is deterministic: the same input always gives the same bytes, whatever the worker count.
 *
 * An input piece may also come already compressed (`Deflated`: a complete raw-deflate stream and its content);
 * it is joined into the member as it is (`deflate-blocks.ts`), after the bytes before it are flushed.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { crc32 } from 'node:zlib';
import { joinPieces } from './deflate-blocks.js';
import type { GzipResult, GzipTask } from './gzip-worker.js';

export interface GzipOptions {
  /** zlib level 1-9 (default 6, as gzip(1)). */
  level?: number;
  /** Bytes per independently compressed chunk (default 1 MiB). */
  chunkSize?: number;
  /** Worker threads (default: available cores). */
  workers?: number;
  /**
   * Store chunks whose first 64 KiB level 1 cannot shrink by 3% (default true). An ostree archive repo is mostly
   * zlib-compressed objects: deflating them again costs most of the build time for about 1% of size.
   */
  adaptive?: boolean;
}

/**
 * `raw` compressed as one complete raw-deflate stream (e.g. an archive-mode ostree object's content).
 * `deflated`'s memory is handed to a worker and back (no copy) when it is the only user of its ArrayBuffer, as
 * a buffer of `fs.readFile` is; do not read it again after passing it in.
 */
export interface Deflated {
  raw: Uint8Array;
  deflated: Uint8Array;
}

export type GzipInput = Uint8Array | Deflated;

export function isDeflated(piece: GzipInput): piece is Deflated {
  return !(piece instanceof Uint8Array);
}

const WINDOW = 32 * 1024;
// Fixed header: no name, mtime 0, no extra flags, OS 255 "unknown" (independent of the build host).
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);

class WorkerPool {
  readonly #workers: Worker[] = [];
  readonly #idle: Worker[] = [];
  readonly #waiting: Array<{ task: GzipTask; resolve: (r: GzipResult) => void; reject: (e: Error) => void }> = [];
  readonly #pending = new Map<number, { resolve: (r: GzipResult) => void; reject: (e: Error) => void }>();

  constructor(size: number) {
    for (let i = 0; i < size; i++) {
      const worker = new Worker(new URL('./gzip-worker.js', import.meta.url));
      worker.on('message', (result: GzipResult) => {
        const entry = this.#pending.get(result.id);
        this.#pending.delete(result.id);
        if (result.error !== undefined) entry?.reject(new Error(result.error));
        else entry?.resolve(result);
        this.#release(worker);
      });
      worker.on('error', (error) => {
        for (const entry of this.#pending.values()) entry.reject(error);
        this.#pending.clear();
      });
      this.#workers.push(worker);
      this.#idle.push(worker);
    }
  }

  run(task: GzipTask): Promise<GzipResult> {
    return new Promise((resolve, reject) => {
      const worker = this.#idle.pop();
      if (worker) this.#dispatch(worker, task, resolve, reject);
      else this.#waiting.push({ task, resolve, reject });
    });
  }

  #dispatch(worker: Worker, task: GzipTask, resolve: (r: GzipResult) => void, reject: (e: Error) => void): void {
    this.#pending.set(task.id, { resolve, reject });
    const transfer = [task.data.buffer as ArrayBuffer];
    worker.postMessage(task, transfer);
  }

  #release(worker: Worker): void {
    const next = this.#waiting.shift();
    if (next) this.#dispatch(worker, next.task, next.resolve, next.reject);
    else this.#idle.push(worker);
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
  }
}

/** Copy into a fresh, exactly-sized buffer that can be transferred to a worker. */
function ownCopy(data: Uint8Array): Uint8Array {
  const copy = new Uint8Array(data.byteLength);
  copy.set(data);
  return copy;
}

function asBuffer(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** Gzip an async byte stream in parallel; yields the compressed bytes in order. */
export async function* parallelGzip(
  source: AsyncIterable<GzipInput>,
  options: GzipOptions = {},
): AsyncGenerator<Buffer> {
  const level = options.level ?? 6;
  const adaptive = options.adaptive ?? true;
  const chunkSize = options.chunkSize ?? 1024 * 1024;
  const poolSize = Math.max(1, options.workers ?? availableParallelism());
  const pool = new WorkerPool(poolSize);
  // Bounded read-ahead: at most two chunks in flight per worker keeps memory flat and every core busy.
  const maxInFlight = poolSize * 2;
  /** Output pieces, in order: one deflated chunk, or a joined stream's unchanged head and patched tail. */
  const inFlight: Promise<Uint8Array[]>[] = [];
  let crc = 0;
  let size = 0;
  let id = 0;
  let previousTail: Uint8Array | null = null;

  // Chunk buffers come back from the workers and are filled again: the input is copied once, into a buffer of
  // its own (transferable), and no chunk is left for a garbage collector that external memory wakes late.
  const spare: Uint8Array[] = [];
  let current: Uint8Array | undefined;
  let filled = 0;
  const submit = (chunk: Uint8Array, last: boolean) => {
    crc = crc32(chunk, crc);
    size += chunk.byteLength;
    const dictionary = previousTail;
    previousTail = chunk.byteLength >= WINDOW ? ownCopy(chunk.subarray(chunk.byteLength - WINDOW)) : null;
    const task = pool.run({ id: id++, data: chunk, dictionary, last, level, adaptive });
    inFlight.push(
      task.then((result) => {
        if (result.input?.buffer.byteLength === chunkSize && spare.length < maxInFlight)
          spare.push(new Uint8Array(result.input.buffer));
        return [result.data];
      }),
    );
  };
  /** Submit what the current buffer holds (it moves to a worker). */
  const submitCurrent = (last: boolean) => {
    const chunk = current ? current.subarray(0, filled) : new Uint8Array(0);
    current = undefined;
    filled = 0;
    submit(chunk, last);
  };
  const join = (piece: Deflated) => {
    crc = crc32(piece.raw, crc);
    size += piece.raw.byteLength;
    const raw = piece.raw;
    previousTail = raw.byteLength >= WINDOW ? ownCopy(raw.subarray(raw.byteLength - WINDOW)) : null;
    // The worker finds the final block and hands the bytes back; only the last block is rewritten here. Big
    // buffers are never Node's shared allocation pool, so theirs can be moved instead of copied.
    const { deflated } = piece;
    const data = deflated.buffer.byteLength > Buffer.poolSize ? deflated : ownCopy(deflated);
    const task = { kind: 'join' as const, id: id++, data, dictionary: null, last: false, level, adaptive };
    inFlight.push(pool.run(task).then((result) => joinPieces(result.data, result.block!)));
  };
  const drain = async function* (below: number) {
    while (inFlight.length > below) for (const piece of await inFlight.shift()!) yield asBuffer(piece);
  };

  try {
    yield HEADER;
    for await (const piece of source) {
      if (isDeflated(piece)) {
        if (filled > 0) submitCurrent(false);
        join(piece);
        yield* drain(maxInFlight - 1);
        continue;
      }
      // A chunk is submitted once more bytes follow it: the last one (possibly empty) carries the final block.
      for (let offset = 0; offset < piece.byteLength; ) {
        if (filled === chunkSize) {
          submitCurrent(false);
          yield* drain(maxInFlight - 1);
        }
        current ??= spare.pop() ?? new Uint8Array(chunkSize);
        const take = Math.min(chunkSize - filled, piece.byteLength - offset);
        current.set(piece.subarray(offset, offset + take), filled);
        filled += take;
        offset += take;
      }
    }
    submitCurrent(true);
    yield* drain(0);
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(crc >>> 0, 0);
    trailer.writeUInt32LE(size % 2 ** 32, 4);
    yield trailer;
  } finally {
    await Promise.allSettled(inFlight);
    await pool.close();
  }
}
