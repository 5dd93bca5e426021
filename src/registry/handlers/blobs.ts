import { corruptsFor, sendBlob } from '../blob-stream.js';
import { parseDigest } from '../digest.js';
import { blobUnknown, RegistryError } from '../errors.js';
import { type RequestContext, send } from './context.js';
import { emitBlobProgress } from './progress.js';
import { pullBlob } from './pull-through.js';

/** Parse a single `Range: bytes=a-b` (RFC 9110 §14.1.2). Multi-range and malformed headers are ignored (200). */
function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (match[2] !== '' && Number(match[2]) < start) return undefined; // invalid: ignore per RFC
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

/**
 * `GET`/`HEAD /v2/<name>/blobs/<digest>` (spec "Pulling blobs"), with single ranges and the faults applied.
 *
 * Contract of `blob.progress` (docs/ARCHITECTURE.md "Events and their contracts"; emitted here and, with the same
 * contract, for blobs streamed from an upstream while they are stored, in pull-through.ts, when the upstream sent
 * their length):
 * each GET response with a body emits a series for its blob and client, `{repository, digest, sent, total,
 * client}` with `total` the bytes of this response (the range's length for a 206). `sent` strictly increases
 * within the series, at most every PROGRESS_INTERVAL_MS, and exactly one event has `sent === total`: the last,
 * sent with the last byte. `node` names the node whose port the request came in on (none on the main port). A response the client cuts short ends without it; HEAD and empty blobs emit
 * nothing. A client that downloads the blob again (or resumes with Range) gets a new series, so consumers
 * need no de-duplication.
 */
export async function handleBlobGet(ctx: RequestContext, name: string, ref: string): Promise<void> {
  const digest = parseDigest(ref);
  if (!(await ctx.repositories.blobInRepo(name, digest)) && (await pullBlob(ctx, name, digest))) return;
  const opened = await ctx.blobs.open(digest);
  if (!opened) throw blobUnknown(digest);
  const { handle, size } = opened;
  try {
    const range = parseRange(ctx.req.headers.range, size);
    if (range === 'unsatisfiable') {
      // No spec code names ranges; SIZE_INVALID ("length did not match content length") is the closest.
      throw new RegistryError(
        416,
        'SIZE_INVALID',
        `range not satisfiable: blob has ${size} bytes`,
        { size },
        {
          'Content-Range': `bytes */${size}`,
        },
      );
    }
    const start = range?.start ?? 0;
    const end = range?.end ?? size - 1;
    const length = size === 0 ? 0 : end - start + 1;
    const { res } = ctx;
    res.statusCode = range ? 206 : 200;
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Docker-Content-Digest', digest);
    res.setHeader('ETag', `"${digest}"`);
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('Cache-Control', 'max-age=31536000');
    res.setHeader('Content-Length', length);
    if (range) res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
    if (ctx.req.method === 'HEAD' || length === 0) {
      res.end();
      return;
    }
    const corrupt = corruptsFor(ctx.faults, ctx.node) && (await ctx.repositories.isLayer(name, digest));
    ctx.length = length;
    ctx.corrupted = corrupt;
    ctx.bytes = await sendBlob(handle, start, length, res, {
      faults: ctx.faults,
      corrupt,
      onSent: (sent) => {
        ctx.bytes = sent;
      },
      onProgress: (sent) => emitBlobProgress(ctx, name, digest, sent, length),
    });
  } finally {
    await handle.close();
  }
}

/** `DELETE /v2/<name>/blobs/<digest>`: unlinks the blob from the repository (the content stays until gc). */
export async function handleBlobDelete(ctx: RequestContext, name: string, ref: string): Promise<void> {
  const digest = parseDigest(ref);
  if (!(await ctx.repositories.unlinkBlob(name, digest))) throw blobUnknown(digest);
  send(ctx, 202, {});
}
