import { MediaType } from '../../oci/media-types.js';
import { parseDigest } from '../digest.js';
import { type RequestContext, send } from './context.js';

/**
 * `GET /v2/<name>/referrers/<digest>` (spec "Listing Referrers"): an image index of the manifests whose subject
 * is the digest, filtered by `artifactType` when asked (and then saying so in `OCI-Filters-Applied`).
 */
export async function handleReferrersList(ctx: RequestContext, name: string, ref: string): Promise<void> {
  const digest = parseDigest(ref);
  let list = await ctx.repositories.referrers.list(name, digest);
  const headers: Record<string, string> = { 'Content-Type': MediaType.ociIndex };
  const artifactType = ctx.query.get('artifactType');
  if (artifactType !== null) {
    list = list.filter((d) => d.artifactType === artifactType);
    headers['OCI-Filters-Applied'] = 'artifactType';
  }
  send(ctx, 200, headers, JSON.stringify({ schemaVersion: 2, mediaType: MediaType.ociIndex, manifests: list }));
}
