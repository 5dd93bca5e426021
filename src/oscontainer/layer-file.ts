/**
 * Write a tar stream as a gzip layer file: parallel gzip (parallel-gzip.ts), with the sha256 of the tar (the
 * config's diff_id) and of the blob (the manifest's digest) computed while streaming. Both oscontainer formats
 * write their layer through here.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { digestOfHash, sha256Hash } from '../oci/digest.js';
import type { LayerInfo } from './image.js';
import { type GzipInput, type GzipOptions, isDeflated, parallelGzip } from './parallel-gzip.js';

export interface LayerFileOptions {
  gzip?: GzipOptions;
  /** Exact size of the tar stream, passed to `onProgress`. */
  total: number;
  /** Called with the uncompressed bytes so far and the total. */
  onProgress?: (uncompressedBytes: number, total: number) => void;
}

/** `tar` may carry already-deflated pieces (the native layer's objects): their `raw` bytes are the tar's. */
export async function writeLayerFile(
  tar: AsyncIterable<GzipInput>,
  outPath: string,
  options: LayerFileOptions,
): Promise<LayerInfo> {
  const diffHash = sha256Hash();
  const blobHash = sha256Hash();
  let uncompressed = 0;
  let size = 0;
  async function* tee(): AsyncGenerator<GzipInput> {
    for await (const chunk of tar) {
      const raw = isDeflated(chunk) ? chunk.raw : chunk;
      diffHash.update(raw);
      uncompressed += raw.byteLength;
      options.onProgress?.(uncompressed, options.total);
      yield chunk;
    }
  }
  const out = createWriteStream(outPath);
  try {
    for await (const chunk of parallelGzip(tee(), options.gzip)) {
      blobHash.update(chunk);
      size += chunk.byteLength;
      if (!out.write(chunk)) await once(out, 'drain');
    }
  } finally {
    out.end();
    await once(out, 'close');
  }
  return { digest: digestOfHash(blobHash), diffId: digestOfHash(diffHash), size };
}
