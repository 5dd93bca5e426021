import { isRepositoryName } from '../../oci/names.js';
import { parseDigest } from '../digest.js';
import { RegistryError } from '../errors.js';
import { contentLength, type RequestContext, send } from './context.js';

/** Where the client continues a session, and how much of it the registry holds (spec: `Range: 0-<last>`). */
function sessionHeaders(name: string, id: string, size: number): Record<string, string> {
  return { Location: `/v2/${name}/blobs/uploads/${id}`, Range: `0-${Math.max(0, size - 1)}`, 'Docker-Upload-UUID': id };
}

function created(ctx: RequestContext, name: string, digest: string): void {
  send(ctx, 201, { Location: `/v2/${name}/blobs/${digest}`, 'Docker-Content-Digest': digest });
}

/** The request body as a blob's bytes: at most what the maximum blob size leaves after the `held` bytes. */
function blobBody(ctx: RequestContext, held: number): AsyncIterable<Buffer> {
  return ctx.limiter.body(ctx.req, ctx.res, ctx.limiter.limits.maxBlobBytes - held);
}

/** The chunk a PATCH or PUT carries, from `Content-Range` (must agree with Content-Length); undefined without. */
function chunkRange(ctx: RequestContext): { start: number; length: number | undefined } | undefined {
  const header = ctx.req.headers['content-range'];
  const length = contentLength(ctx.req);
  if (header === undefined) return undefined;
  const match = /^(?:bytes )?(\d+)-(\d+)(?:\/(?:\d+|\*))?$/.exec(header.trim());
  if (!match) throw new RegistryError(416, 'BLOB_UPLOAD_INVALID', `malformed Content-Range '${header}'`);
  const start = Number(match[1]);
  const end = Number(match[2]);
  if (end < start || (length !== undefined && end - start + 1 !== length))
    throw new RegistryError(416, 'BLOB_UPLOAD_INVALID', `Content-Range '${header}' does not match the body length`);
  return { start, length: end - start + 1 };
}

/**
 * `POST /v2/<name>/blobs/uploads/`: a cross-repository mount (`mount`, `from`), a monolithic upload (`digest`,
 * body verified while streaming), or a new session (202 with its Location).
 */
export async function handleUploadStart(ctx: RequestContext, name: string): Promise<void> {
  const mount = ctx.query.get('mount');
  if (mount !== null) {
    const digest = parseDigest(mount);
    const from = ctx.query.get('from');
    // Spec: `from` MAY be treated as optional; without it we mount any blob the store holds.
    const source =
      from !== null && isRepositoryName(from)
        ? await ctx.repositories.blobInRepo(from, digest)
        : await ctx.blobs.stat(digest);
    if (source) {
      await ctx.repositories.linkBlob(name, digest);
      return created(ctx, name, digest);
    }
  }
  const digestParam = ctx.query.get('digest');
  if (digestParam !== null) {
    const digest = parseDigest(digestParam);
    const length = contentLength(ctx.req);
    await ctx.limiter.admitBlob(length);
    const info = await ctx.blobs.put(blobBody(ctx, 0), digest, length);
    await ctx.repositories.linkBlob(name, info.digest);
    return created(ctx, name, info.digest);
  }
  await ctx.limiter.admitSession(() => ctx.uploads.count());
  const id = await ctx.uploads.create(name);
  send(ctx, 202, sessionHeaders(name, id, 0));
}

/** `PATCH /v2/<name>/blobs/uploads/<id>`: append a chunk (in order, when Content-Range says where). */
export async function handleUploadPatch(ctx: RequestContext, name: string, id: string): Promise<void> {
  const range = chunkRange(ctx);
  const length = range?.length ?? contentLength(ctx.req);
  const held = await ctx.uploads.size(name, id);
  await ctx.limiter.admitBlob(length, held);
  const size = await ctx.uploads.append(name, id, blobBody(ctx, held), range?.start, length);
  send(ctx, 202, sessionHeaders(name, id, size));
}

/** `PUT /v2/<name>/blobs/uploads/<id>?digest=`: the last chunk (optional), then verify and publish the blob. */
export async function handleUploadPut(ctx: RequestContext, name: string, id: string): Promise<void> {
  const digest = parseDigest(ctx.query.get('digest'));
  const range = chunkRange(ctx);
  const length = contentLength(ctx.req);
  const hasBody =
    range !== undefined || (length === undefined ? ctx.req.headers['transfer-encoding'] !== undefined : length > 0);
  const held = hasBody ? await ctx.uploads.size(name, id) : 0;
  if (hasBody) await ctx.limiter.admitBlob(range?.length ?? length, held);
  if (range) await ctx.uploads.append(name, id, blobBody(ctx, held), range.start, range.length);
  const last = hasBody && !range ? blobBody(ctx, held) : undefined;
  const info = await ctx.uploads.complete(name, id, digest, last, length);
  created(ctx, name, info.digest);
}

/** `GET /v2/<name>/blobs/uploads/<id>`: how much the session holds (spec "resuming"). */
export async function handleUploadStatus(ctx: RequestContext, name: string, id: string): Promise<void> {
  send(ctx, 204, sessionHeaders(name, id, await ctx.uploads.size(name, id)));
}

/** `DELETE /v2/<name>/blobs/uploads/<id>`: drop the session and its data. */
export async function handleUploadCancel(ctx: RequestContext, name: string, id: string): Promise<void> {
  await ctx.uploads.cancel(name, id);
  send(ctx, 204, {});
}
