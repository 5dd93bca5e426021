/** Manifests by tag or digest (distribution spec "Pulling manifests", "Pushing Manifests"), digests checked. */
import { DevpivotError } from '../../core/errors.js';
import { digestOf } from '../../oci/digest.js';
import { IMAGE_MANIFEST_TYPES, INDEX_TYPES } from '../../oci/media-types.js';
import { pullScope, pushScope, type RegistryTransport } from '../transport/transport.js';

/** What we send in Accept when fetching a manifest: every format we understand. */
const MANIFEST_ACCEPT = [...IMAGE_MANIFEST_TYPES, ...INDEX_TYPES].join(', ');

export interface FetchedManifest {
  bytes: Buffer;
  mediaType: string;
  digest: string;
}

/** The manifest as served; by digest, it must hash to that digest (DIGEST_MISMATCH otherwise). */
export async function getManifest(
  transport: RegistryTransport,
  repository: string,
  reference: string,
): Promise<FetchedManifest> {
  const response = await transport.request('GET', `/v2/${repository}/manifests/${reference}`, repository, {
    scopes: [pullScope(repository)],
    headers: { accept: MANIFEST_ACCEPT },
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const digest = digestOf(bytes);
  if (reference.startsWith('sha256:') && digest !== reference) {
    throw new DevpivotError(
      'DIGEST_MISMATCH',
      `manifest ${repository}@${reference} from ${transport.registry} hashes to ${digest}`,
      { hint: 'the registry served corrupted or different content; do not trust it' },
    );
  }
  const mediaType =
    response.headers.get('content-type')?.split(';')[0]?.trim() ||
    ((JSON.parse(bytes.toString('utf8')) as { mediaType?: string }).mediaType ?? '');
  return { bytes, mediaType, digest };
}

/** PUT a manifest under a tag or digest; returns its digest (checked against the registry's answer). */
export async function putManifest(
  transport: RegistryTransport,
  repository: string,
  reference: string,
  bytes: Buffer,
  mediaType: string,
): Promise<string> {
  const response = await transport.request('PUT', `/v2/${repository}/manifests/${reference}`, repository, {
    scopes: [pushScope(repository)],
    headers: { 'content-type': mediaType },
    body: bytes,
  });
  await response.body?.cancel();
  const digest = digestOf(bytes);
  const answered = response.headers.get('docker-content-digest');
  if (answered && answered !== digest) {
    throw new DevpivotError(
      'DIGEST_MISMATCH',
      `${transport.registry} stored manifest as ${answered}, expected ${digest}`,
    );
  }
  return digest;
}
