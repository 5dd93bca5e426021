/**
 * Worker thread of `parallel-gzip.ts`: compresses one chunk as raw deflate, or makes an existing deflate stream
 * joinable (`deflate-blocks.ts`). Every chunk but the last ends with a sync flush (byte-aligned, not final), so
 * the concatenated outputs form one valid deflate stream.
 */
import { parentPort } from 'node:worker_threads';
import { constants, deflateRawSync } from 'node:zlib';
import { type FinalBlock, findFinalBlock } from './deflate-blocks.js';

export interface GzipTask {
  /** `join`: `data` is a complete raw-deflate stream; the result is where its final block is (`block`). */
  kind?: 'deflate' | 'join';
  id: number;
  data: Uint8Array;
  dictionary: Uint8Array | null;
  last: boolean;
  level: number;
  /** Store (level 0) chunks that barely compress, judged on a sample: see `parallel-gzip.ts`. */
  adaptive: boolean;
}

const SAMPLE = 64 * 1024;
/** A sample that level 1 cannot shrink below this ratio is treated as already compressed. */
const INCOMPRESSIBLE = 0.97;

/** Room for deflating `bytes` in any case: stored blocks cost 5 bytes per 16 KiB; 1 KiB covers headers and flush. */
function worstCase(bytes: number): number {
  return bytes + 5 * Math.ceil(bytes / 16384) + 1024;
}

/** Level for a chunk: decided from its own bytes only, so the output stays deterministic. */
function levelFor(task: GzipTask): number {
  if (!task.adaptive || task.level === 0) return task.level;
  const sample = task.data.subarray(0, SAMPLE);
  const compressed = deflateRawSync(sample, { level: 1, chunkSize: worstCase(sample.byteLength) }).byteLength;
  return compressed > sample.byteLength * INCOMPRESSIBLE ? 0 : task.level;
}

export interface GzipResult {
  id: number;
  data: Uint8Array;
  /** A deflate task's input, handed back for the next chunk (so no isolate keeps a dead megabyte per chunk). */
  input?: Uint8Array;
  /** For a `join` task, whose `data` is the task's, handed back. */
  block?: FinalBlock;
  /** Set when the task failed (e.g. a corrupt deflate stream to join). */
  error?: string;
}

parentPort?.on('message', (task: GzipTask) => {
  try {
    if (task.kind === 'join') {
      const block = findFinalBlock(task.data);
      const result: GzipResult = { id: task.id, data: task.data, block };
      parentPort!.postMessage(result, [task.data.buffer as ArrayBuffer]);
      return;
    }
    // One output buffer big enough for deflate's worst case (stored blocks: 5 bytes per 16 KiB, plus the flush)
    // instead of zlib's default 16 KiB pieces and their concatenation: no garbage here per chunk.
    const output = deflateRawSync(task.data, {
      level: levelFor(task),
      ...(task.dictionary ? { dictionary: task.dictionary } : {}),
      finishFlush: task.last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH,
      chunkSize: worstCase(task.data.byteLength),
    });
    // Outside Node's shared pool the result's memory is its own: it moves to the main thread (a view of it).
    const data = output.buffer.byteLength > Buffer.poolSize ? output : new Uint8Array(output);
    // Both buffers go back by transfer: whatever stays here is freed only at this isolate's next GC, which
    // external memory triggers late (measured: each worker grew by ~60 MiB over the fixture's 61 MB layer).
    parentPort!.postMessage({ id: task.id, data, input: task.data } satisfies GzipResult, [
      data.buffer as ArrayBuffer,
      task.data.buffer as ArrayBuffer,
    ]);
  } catch (error) {
    parentPort!.postMessage({ id: task.id, data: new Uint8Array(0), error: (error as Error).message });
  }
});
