/**
 * Download a blob to a file, verifying its digest while streaming. A broken connection resumes with
 * `Range: bytes=N-` from what is already on disk; a server that ignores Range (200) restarts from zero; a
 * registry that is briefly unreachable or answers 5xx gets the remaining attempts (transport/retry.ts). What was
 * received is kept as a partial (partial.ts) when the download fails, so the next run resumes it.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, open, rename, rm, truncate } from 'node:fs/promises';
import { DevpivotError } from '../../core/errors.js';
import { digestOfHash, sha256Hash } from '../../oci/digest.js';
import { backoff, isTransient } from '../transport/retry.js';
import { pullScope, type RegistryTransport } from '../transport/transport.js';
import { takePartial } from './partial.js';

/** Attempts per blob unless the client is told otherwise. */
export const DEFAULT_ATTEMPTS = 5;

export async function downloadBlob(
  transport: RegistryTransport,
  repository: string,
  blob: { digest: string; size: number },
  path: string,
  options: { attempts?: number; onProgress?: (received: number) => void } = {},
): Promise<void> {
  const { digest, size } = blob;
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS;
  const signal = transport.signal;
  const partial = transport.partialDir ? await takePartial(transport.partialDir, digest, size) : undefined;
  const file = partial?.path ?? path;
  let hash = sha256Hash();
  let received = 0;
  if (partial && partial.size > 0) {
    // Resume a partial another run left: its bytes are the start of this blob (the final digest check covers them).
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
    received = partial.size;
    options.onProgress?.(received);
  } else await (await open(file, 'w')).close();
  let lastError: unknown;
  let ok = false;
  try {
    for (let attempt = 0; attempt < attempts && received < size; attempt++) {
      if (attempt > 0) await backoff(attempt, signal);
      let response: Response;
      try {
        response = await transport.request('GET', `/v2/${repository}/blobs/${digest}`, repository, {
          scopes: [pullScope(repository)],
          headers: received > 0 ? { range: `bytes=${received}-` } : {},
          attempts: 1,
        });
      } catch (error) {
        if (!isTransient(error)) throw error;
        lastError = error;
        continue;
      }
      if (received > 0 && response.status !== 206) {
        hash = sha256Hash();
        received = 0;
        await truncate(file, 0);
      }
      const out = createWriteStream(file, { flags: 'a' });
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          hash.update(chunk);
          received += chunk.byteLength;
          if (!out.write(chunk)) await once(out, 'drain');
          options.onProgress?.(received);
        }
      } catch (error) {
        if (signal?.aborted) throw error;
        lastError = error; // connection broken mid-blob: resume from `received`
      } finally {
        out.end();
        await once(out, 'close');
      }
    }
    const where = `${transport.registry}/${repository}`;
    if (received < size) {
      throw new DevpivotError(
        'BLOB_DOWNLOAD_FAILED',
        `blob ${digest} from ${where}: got ${received} of ${size} bytes after ${attempts} attempts`,
        {
          hint: 'check the network and the registry, then retry (the bytes received are kept for it)',
          cause: lastError,
        },
      );
    }
    const actual = digestOfHash(hash);
    if (received !== size || actual !== digest) {
      await partial?.release(false);
      throw new DevpivotError(
        'DIGEST_MISMATCH',
        `blob ${digest} from ${where} is corrupt: ${received} bytes hashing to ${actual}`,
        { hint: 'the registry served different content than its manifest names' },
      );
    }
    if (partial) await moveInto(file, path);
    ok = true;
  } finally {
    await partial?.release(!ok);
  }
}

/** Move the completed partial to where the caller wants the blob (a copy across file systems). */
async function moveInto(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await copyFile(from, to);
    await rm(from, { force: true });
  }
}
