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

/** Level for a chunk: decided from its own bytes only, so the output stays deterministic. */
function levelFor(task: GzipTask): number {
  if (!task.adaptive || task.level === 0) return task.level;
  const sample = task.data.subarray(0, SAMPLE);
  const compressed = deflateRawSync(sample, { level: 1 }).byteLength;
  return compressed > sample.byteLength * INCOMPRESSIBLE ? 0 : task.level;
}

export interface GzipResult {
  id: number;
  data: Uint8Array;
  /** For a `join` task (with empty `data`). */
  block?: FinalBlock;
  /** Set when the task failed (e.g. a corrupt deflate stream to join). */
  error?: string;
}

parentPort?.on('message', (task: GzipTask) => {
  try {
    if (task.kind === 'join') {
      const block = findFinalBlock(task.data);
      parentPort!.postMessage({ id: task.id, data: new Uint8Array(0), block } satisfies GzipResult);
      return;
    }
    const output = deflateRawSync(task.data, {
      level: levelFor(task),
      ...(task.dictionary ? { dictionary: task.dictionary } : {}),
      finishFlush: task.last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH,
    });
    const copy = new Uint8Array(output.byteLength);
    copy.set(output);
    parentPort!.postMessage({ id: task.id, data: copy } satisfies GzipResult, [copy.buffer]);
  } catch (error) {
    parentPort!.postMessage({ id: task.id, data: new Uint8Array(0), error: (error as Error).message });
  }
});
