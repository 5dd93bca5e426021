import { PROGRESS_INTERVAL_MS } from '../blob-stream.js';
import { blobUnknown } from '../errors.js';
import type { StoredManifest } from '../storage/repository-index.js';
import type { RequestContext } from './context.js';
import { emitBlobProgress } from './progress.js';

/**
 * A blob `name` lacks, under pull-through: answered from the upstream (true), or linked from the pool when another
 * repository has it (false: the caller serves it from the store). Without pull-through for `name`, BLOB_UNKNOWN.
 */
export async function pullBlob(ctx: RequestContext, name: string, digest: string): Promise<boolean> {
  const pull = ctx.pullThrough;
  if (!pull?.covers(name)) throw blobUnknown(digest);
  if (ctx.req.method !== 'HEAD') {
    let reported = Date.now();
    return pull.sendBlob(name, digest, ctx.res, (sent, total) => {
      ctx.bytes = sent;
      // Without the upstream's length there is no total to report against: no progress, as for an empty blob.
      if (total === undefined || total === 0) return;
      const now = Date.now();
      if (sent !== total && now - reported < PROGRESS_INTERVAL_MS) return;
      reported = now;
      emitBlobProgress(ctx, name, digest, sent, total);
    });
  }
  if (await ctx.blobs.has(digest)) {
    await ctx.repositories.linkBlob(name, digest);
    return false;
  }
  const size = await pull.headBlob(name, digest);
  ctx.res.statusCode = 200;
  ctx.res.setHeader('Content-Type', 'application/octet-stream');
  ctx.res.setHeader('Docker-Content-Digest', digest);
  ctx.res.setHeader('Content-Length', size);
  ctx.res.end();
  return true;
}

/** A manifest by digest `name` lacks, from the upstream when `name` pulls through; undefined otherwise. */
export async function pullManifest(
  ctx: RequestContext,
  name: string,
  ref: string,
): Promise<StoredManifest | undefined> {
  if (!ref.includes(':') || !ctx.pullThrough?.covers(name)) return undefined;
  return ctx.pullThrough.manifest(name, ref);
}
