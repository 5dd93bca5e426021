/**
 * Write a tar stream as a compressed layer file, with the sha256 of the tar (the config's diff_id) and of the blob
 * (the manifest's digest) computed while streaming. Both oscontainer formats write their layer through here.
 *
 * - `gzip` (default): parallel gzip (parallel-gzip.ts), which joins the native layer's already-deflated objects
 *   instead of compressing them again.
 * - `zstd` (native images only, OCI `tar+zstd`): the `zstd` program, level 3, two workers; its bytes depend on the
 *   host's zstd release as gzip's on zlib's. Why a native layer may be zstd: docs/PROTOCOLS.md "Layer compression".
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { DevpivotError } from '../core/errors.js';
import { digestOfHash, sha256Hash } from '../oci/digest.js';
import type { LayerCompression } from '../oci/format.js';
import type { LayerInfo } from './image.js';
import { type GzipInput, type GzipOptions, isDeflated, parallelGzip } from './parallel-gzip.js';

export type { LayerCompression } from '../oci/format.js';

export interface LayerFileOptions {
  /** Default gzip. */
  compression?: LayerCompression;
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
    const compressed = options.compression === 'zstd' ? zstd(tee()) : parallelGzip(tee(), options.gzip);
    for await (const chunk of compressed) {
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

/** The tar's raw bytes through `zstd -3 -T2`; its output as it comes. Throws when zstd fails or is missing. */
async function* zstd(tar: AsyncIterable<GzipInput>): AsyncGenerator<Buffer> {
  const child = spawn('zstd', ['-3', '-T2', '-q', '-c', '--no-progress'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const exited = new Promise<{ code: number | null; error?: Error }>((resolve) => {
    child.once('error', (error) => resolve({ code: null, error }));
    child.once('close', (code) => resolve({ code }));
  });
  // stdin is fed while stdout is read below; a write error (zstd gone) ends the feed, the exit says why.
  const feed = (async () => {
    try {
      for await (const chunk of tar) {
        const raw = isDeflated(chunk) ? chunk.raw : chunk;
        if (!child.stdin.write(raw)) await Promise.race([once(child.stdin, 'drain'), exited]);
        if (child.exitCode !== null || child.killed) return;
      }
      child.stdin.end();
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
  })();
  feed.catch(() => {}); // awaited below; this only keeps an early return from leaving it unhandled
  child.stdin.on('error', () => {});
  let complete = false;
  try {
    for await (const chunk of child.stdout) yield chunk as Buffer;
    complete = true;
  } finally {
    // Only a consumer that stopped early ends zstd: at the end of its output it is exiting on its own.
    if (!complete) child.kill('SIGKILL');
  }
  await feed;
  const exit = await exited;
  if (exit.error || exit.code !== 0)
    throw new DevpivotError(
      'BUILD_ZSTD_FAILED',
      `zstd failed: ${exit.error?.message ?? (stderr.trim() || `exit ${exit.code}`)}`,
      { hint: 'install zstd (Debian: apt-get install zstd; npm run setup does), or build with compression gzip' },
    );
}
