import { bareMediaType, isAnyManifestType } from '../../oci/media-types.js';
import { parseDigest } from '../digest.js';
import { manifestUnknown, nameUnknown, RegistryError } from '../errors.js';
import { MAX_MANIFEST_BYTES } from '../manifest.js';
import { type RequestContext, readBody, send } from './context.js';
import { pullManifest } from './pull-through.js';

/** Spec "Pulling manifests": honour Accept only when it names manifest types and none of them is stored. */
function acceptable(acceptHeader: string | undefined, mediaType: string): boolean {
  if (!acceptHeader) return true;
  const types = acceptHeader.split(',').map((part) => bareMediaType(part));
  if (types.includes('*/*') || types.includes(mediaType)) return true;
  return !types.some((type) => isAnyManifestType(type));
}

/** `GET`/`HEAD /v2/<name>/manifests/<tag or digest>`: the bytes as pushed, with their media type and digest. */
export async function handleManifestGet(ctx: RequestContext, name: string, ref: string): Promise<void> {
  if (ref.includes(':')) parseDigest(ref);
  const manifest = (await ctx.repositories.getManifest(name, ref)) ?? (await pullManifest(ctx, name, ref));
  if (!manifest) throw (await ctx.repositories.hasRepository(name)) ? manifestUnknown(ref) : nameUnknown(name);
  if (!acceptable(ctx.req.headers.accept, manifest.mediaType))
    throw new RegistryError(404, 'MANIFEST_UNKNOWN', `manifest is a ${manifest.mediaType}, not an accepted type`, {
      mediaType: manifest.mediaType,
    });
  send(
    ctx,
    200,
    { 'Content-Type': manifest.mediaType, 'Docker-Content-Digest': manifest.digest, ETag: `"${manifest.digest}"` },
    manifest.bytes,
  );
}

/** `PUT /v2/<name>/manifests/<tag or digest>` (spec "Pushing Manifests"), answering `OCI-Subject` for referrers. */
export async function handleManifestPut(ctx: RequestContext, name: string, ref: string): Promise<void> {
  ctx.limiter.continue(ctx.req, ctx.res);
  const body = await readBody(ctx.req, MAX_MANIFEST_BYTES);
  const result = await ctx.repositories.putManifest(name, ref, body, ctx.req.headers['content-type']);
  const headers: Record<string, string> = {
    Location: `/v2/${name}/manifests/${result.digest}`,
    'Docker-Content-Digest': result.digest,
  };
  if (result.subject) headers['OCI-Subject'] = result.subject;
  send(ctx, 201, headers);
}

/** `DELETE /v2/<name>/manifests/<tag or digest>`: a tag alone, or the manifest with its tags and referrer entry. */
export async function handleManifestDelete(ctx: RequestContext, name: string, ref: string): Promise<void> {
  if (!(await ctx.repositories.hasRepository(name))) throw nameUnknown(name);
  await ctx.repositories.deleteManifest(name, ref);
  send(ctx, 202, {});
}
