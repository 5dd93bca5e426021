/**
 * Download a `url:` disk image into the cache: progress as it comes, resumable, checked before it is used.
 *
 * Guarantees: `target` appears (by rename) only with the promised sha256, hashed while the bytes arrive (a resume
 * hashes the kept part once, first). An interrupted download (network error, Ctrl-C, deadline) keeps
 * `target.partial`, and the next call asks for the rest with `Range: bytes=N-`; a server that answers 200 instead
 * of 206 is read from the start again. A complete file with the wrong sha256 is deleted (a resume could never mend
 * it) and reported with both digests. Two runs wanting the same image: the second waits on `target.lock` (the
 * owner's pid; a dead owner's lock is taken over, images/lock.ts) and then uses what the first downloaded.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DevpivotError, ExitCode } from '../core/errors.js';
import { acquireLock } from '../fixture/lock.js';

export interface DownloadOptions {
  /** The image's name in the scenario, for messages. */
  name: string;
  url: string;
  sha256: string;
  target: string;
  signal: AbortSignal;
  /** Bytes on disk so far and the whole size when the server said it. */
  onProgress?: (done: number, total: number | null) => void;
  /** How long to wait for another run downloading the same image (default 1 h). */
  lockTimeoutMs?: number;
}

/** Progress at most every this many bytes (a 1 GiB image: ~256 events). */
const PROGRESS_EVERY = 4 * 1024 * 1024;

export async function downloadImage(options: DownloadOptions): Promise<void> {
  const lock = await acquireLock(`${options.target}.lock`, options.signal, options.lockTimeoutMs ?? 60 * 60_000, {
    code: 'IMAGE_LOCKED',
    holder: `another run downloading ${options.url}`,
  });
  try {
    // The run we waited for may have finished it; it renamed only a checked file into place.
    if ((await sizeOf(options.target)) > 0) return;
    await download(options);
  } finally {
    await lock.release();
  }
}

async function download(options: DownloadOptions): Promise<void> {
  const { name, url, target, signal } = options;
  const partial = `${target}.partial`;
  const have = await sizeOf(partial);
  let response: Response;
  try {
    response = await fetch(url, { signal, headers: have > 0 ? { Range: `bytes=${have}-` } : {} });
  } catch (error) {
    throw downloadFailed(name, url, error, have);
  }
  let start = 0;
  if (response.status === 206 && have > 0 && contentRangeStart(response) === have) start = have;
  else if (response.status === 416 && have > 0) {
    // Nothing past what we have: the partial file may be the whole image. The check below decides.
    await response.body?.cancel();
    await check(options, partial, await hashOf(partial, signal));
    await rename(partial, target);
    return;
  } else if (response.status !== 200) {
    await response.body?.cancel();
    throw downloadFailed(name, url, new Error(`HTTP ${response.status} ${response.statusText}`), have);
  }
  // The kept part is hashed once, before the rest arrives; a 200 starts the hash (and the file) over.
  const hash = start > 0 ? await hashOf(partial, signal) : createHash('sha256');
  const length = response.headers.get('content-length');
  const total = length === null ? null : start + Number(length);
  let done = start;
  let reported = -PROGRESS_EVERY;
  options.onProgress?.(done, total);
  const count = new Transform({
    transform(chunk: Buffer, _encoding, next) {
      done += chunk.length;
      hash.update(chunk);
      if (done - reported >= PROGRESS_EVERY) {
        reported = done;
        options.onProgress?.(done, total);
      }
      next(null, chunk);
    },
  });
  try {
    if (!response.body) throw new Error('the response has no body');
    await pipeline(
      Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>),
      count,
      createWriteStream(partial, start > 0 ? { flags: 'a' } : {}),
      { signal },
    );
  } catch (error) {
    throw downloadFailed(name, url, error, done);
  }
  options.onProgress?.(done, total);
  if (total !== null && done !== total)
    throw downloadFailed(name, url, new Error(`the server sent ${done - start} of ${total - start} bytes`), done);
  await check(options, partial, hash);
  await rename(partial, target);
}

async function hashOf(file: string, signal: AbortSignal): Promise<Hash> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { signal })) hash.update(chunk as Buffer);
  return hash;
}

async function check(options: DownloadOptions, file: string, hash: Hash): Promise<void> {
  const actual = hash.digest('hex');
  if (actual === options.sha256) return;
  await rm(file, { force: true });
  throw new DevpivotError(
    'IMAGE_CHECKSUM',
    `image '${options.name}': ${options.url} has sha256 ${actual}, the scenario expects ${options.sha256}`,
    {
      hint: 'the download was deleted; fix the sha256 in the scenario if the image was updated, or the URL',
      exitCode: ExitCode.usage,
    },
  );
}

function contentRangeStart(response: Response): number | undefined {
  const match = /^bytes (\d+)-/.exec(response.headers.get('content-range') ?? '');
  return match ? Number(match[1]) : undefined;
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}

function downloadFailed(name: string, url: string, error: unknown, kept: number): DevpivotError {
  return new DevpivotError('IMAGE_DOWNLOAD', `image '${name}': cannot download ${url}: ${(error as Error).message}`, {
    hint:
      kept > 0
        ? 'what arrived is kept: run again to resume, or download it yourself and use { path, sha256 }'
        : 'check the URL, or download it yourself and use { path, sha256 }',
    exitCode: ExitCode.usage,
    cause: error,
  });
}
