/**
 * Worker thread of `parallel-gzip.ts`: compresses one chunk as raw deflate. Every chunk but the last ends with a
 * sync flush (byte-aligned, not final), so the concatenated outputs form one valid deflate stream.
 */
import { parentPort } from 'node:worker_threads';
import { constants, deflateRawSync } from 'node:zlib';

export interface GzipTask {
  id: number;
  data: Uint8Array;
  dictionary: Uint8Array | null;
  last: boolean;
  level: number;
}

export interface GzipResult {
  id: number;
  data: Uint8Array;
}

parentPort?.on('message', (task: GzipTask) => {
  const output = deflateRawSync(task.data, {
    level: task.level,
    ...(task.dictionary ? { dictionary: task.dictionary } : {}),
    finishFlush: task.last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH,
  });
  const copy = new Uint8Array(output.byteLength);
  copy.set(output);
  parentPort!.postMessage({ id: task.id, data: copy } satisfies GzipResult, [copy.buffer]);
});
