import type { Descriptor } from '../oci/descriptor.js';
import { isSha256Digest } from '../oci/digest.js';
import {
  ANY_MANIFEST_TYPES,
  bareMediaType,
  isAnyManifestType,
  isDistributable,
  isIndexType,
  MediaType,
} from '../oci/media-types.js';
import { manifestInvalid } from './errors.js';

/** Spec "Pushing Manifests": registries SHOULD accept at least 4 MiB; bigger ones get 413. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export interface ParsedManifest {
  mediaType: string;
  isIndex: boolean;
  config: Descriptor | undefined;
  /** Blobs that must exist before the manifest is accepted (config and distributable layers). */
  requiredBlobs: string[];
  /** Layer digests (what the corrupt-blob fault corrupts). */
  layers: string[];
  /** Child manifests of an index: must exist in the repository. */
  children: string[];
  subject: Descriptor | undefined;
  artifactType: string | undefined;
  annotations: Record<string, string> | undefined;
}

function descriptor(value: unknown, where: string): Descriptor {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw manifestInvalid(`${where} is not a descriptor object`);
  const d = value as Record<string, unknown>;
  if (typeof d.mediaType !== 'string' || d.mediaType === '') throw manifestInvalid(`${where}.mediaType is missing`);
  if (typeof d.digest !== 'string' || !isSha256Digest(d.digest))
    throw manifestInvalid(`${where}.digest is not a sha256 digest`, { digest: d.digest });
  if (typeof d.size !== 'number' || !Number.isSafeInteger(d.size) || d.size < 0)
    throw manifestInvalid(`${where}.size is not a non-negative integer`);
  return d as unknown as Descriptor;
}

function descriptors(value: unknown, where: string): Descriptor[] {
  if (!Array.isArray(value)) throw manifestInvalid(`${where} must be an array`);
  return value.map((item, i) => descriptor(item, `${where}[${i}]`));
}

/**
 * Parse and validate a pushed manifest. `contentType` is the request's Content-Type; when the body declares a
 * `mediaType` they must agree (spec: clients MUST set Content-Type to the body's mediaType).
 */
export function parseManifest(bytes: Uint8Array, contentType: string | undefined): ParsedManifest {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch (error) {
    throw manifestInvalid(`manifest is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw manifestInvalid('manifest is not a JSON object');
  const m = json as Record<string, unknown>;
  if (m.schemaVersion !== 2) throw manifestInvalid('schemaVersion must be 2', { schemaVersion: m.schemaVersion });
  const header = bareMediaType(contentType);
  const declared = typeof m.mediaType === 'string' ? m.mediaType : undefined;
  if (declared !== undefined && header !== '' && isAnyManifestType(header) && declared !== header)
    throw manifestInvalid(`Content-Type '${header}' does not match the manifest's mediaType '${declared}'`);
  let mediaType = declared ?? (isAnyManifestType(header) ? header : undefined);
  // OCI allows an absent mediaType: tell an index from a manifest by its fields.
  if (mediaType === undefined) mediaType = 'manifests' in m ? MediaType.ociIndex : MediaType.ociManifest;
  if (!isAnyManifestType(mediaType))
    throw manifestInvalid(`unsupported manifest media type '${mediaType}'`, { accepted: ANY_MANIFEST_TYPES });

  const subject = m.subject === undefined ? undefined : descriptor(m.subject, 'subject');
  const artifactType = typeof m.artifactType === 'string' ? m.artifactType : undefined;
  const annotations =
    typeof m.annotations === 'object' && m.annotations !== null ? (m.annotations as Record<string, string>) : undefined;
  if (isIndexType(mediaType)) {
    const children = descriptors(m.manifests, 'manifests');
    return {
      mediaType,
      isIndex: true,
      config: undefined,
      requiredBlobs: [],
      layers: [],
      children: children.map((d) => d.digest),
      subject,
      artifactType,
      annotations,
    };
  }
  const config = descriptor(m.config, 'config');
  const layers = descriptors(m.layers, 'layers');
  const distributable = layers.filter((d) => isDistributable(d.mediaType));
  return {
    mediaType,
    isIndex: false,
    config,
    requiredBlobs: [config.digest, ...distributable.map((d) => d.digest)],
    layers: distributable.map((d) => d.digest),
    children: [],
    subject,
    artifactType,
    annotations,
  };
}

/** The descriptor a referrers response lists for a manifest (spec "Listing Referrers"). */
export function referrerDescriptor(parsed: ParsedManifest, digest: string, size: number): Descriptor {
  const d: Descriptor = { mediaType: parsed.mediaType, digest, size };
  // artifactType, else the config's media type for image manifests.
  const artifactType = parsed.artifactType ?? parsed.config?.mediaType;
  if (artifactType !== undefined) d.artifactType = artifactType;
  if (parsed.annotations !== undefined) d.annotations = parsed.annotations;
  return d;
}
