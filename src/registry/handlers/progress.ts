import type { RequestContext } from './context.js';

/** One `blob.progress` of the blob response `ctx` is sending (its contract: blobs.ts `handleBlobGet`). */
export function emitBlobProgress(ctx: RequestContext, name: string, digest: string, sent: number, total: number): void {
  ctx.bus?.emit({
    kind: 'blob.progress',
    repository: name,
    digest,
    sent,
    total,
    client: ctx.client,
    ...(ctx.node !== undefined ? { node: ctx.node } : {}),
  });
}
