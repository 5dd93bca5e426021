/**
 * The legacy oscontainer's image config and manifest (docs/PROTOCOLS.md "legacy (openshift/pivot)"): labels
 * `com.coreos.ostree-commit` and `version`, entrypoint `/noentry`, one layer. Built from fixed values only, so
 * they are reproducible.
 */
import type { Descriptor } from '../oci/descriptor.js';
import { digestOf } from '../oci/digest.js';
import type { ImageManifest } from '../oci/manifest.js';
import { MediaType } from '../oci/media-types.js';

export const OSTREE_COMMIT_LABEL = 'com.coreos.ostree-commit';
/** Creation time recorded in the image: fixed, for reproducible digests. */
export const FIXED_CREATED = '1970-01-01T00:00:00Z';

export interface LayerInfo {
  /** sha256 of the compressed blob. */
  digest: string;
  /** sha256 of the uncompressed tar (the config's rootfs diff_id). */
  diffId: string;
  size: number;
}

export interface OscontainerMeta {
  commit: string;
  version: string;
  /** Extra labels, merged after the standard ones. */
  labels?: Record<string, string>;
}

/** The image config (OCI image spec config.md; the Docker format has the same fields). */
export function imageConfig(meta: OscontainerMeta, layer: LayerInfo): Record<string, unknown> {
  const labels: Record<string, string> = {
    [OSTREE_COMMIT_LABEL]: meta.commit,
    version: meta.version,
    'org.opencontainers.image.version': meta.version,
    'org.opencontainers.image.created': FIXED_CREATED,
    ...meta.labels,
  };
  return {
    architecture: 'amd64',
    os: 'linux',
    created: FIXED_CREATED,
    config: { Entrypoint: ['/noentry'], Labels: labels },
    rootfs: { type: 'layers', diff_ids: [layer.diffId] },
    history: [{ created: FIXED_CREATED, created_by: 'devpivot build', comment: `ostree commit ${meta.commit}` }],
  };
}

export interface BuiltManifest {
  manifest: ImageManifest;
  bytes: Buffer;
  digest: string;
  mediaType: string;
}

export function encodeJson(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

/** A Docker v2 schema 2 manifest, or an OCI manifest when `oci` (only OCI manifests carry `annotations`). */
export function imageManifest(
  config: Buffer,
  layer: LayerInfo,
  oci: boolean,
  annotations?: Record<string, string>,
): BuiltManifest {
  return layeredManifest(config, [layer], oci, annotations);
}

/**
 * As `imageManifest`, with several layers in order, each with its own annotations (OCI only). `zstd`: the layers
 * are zstd-compressed (`tar+zstd`, an OCI media type only).
 */
export function layeredManifest(
  config: Buffer,
  layers: (LayerInfo & { annotations?: Record<string, string> })[],
  oci: boolean,
  annotations?: Record<string, string>,
  zstd = false,
): BuiltManifest {
  if (zstd && !oci) throw new Error('a zstd layer needs an OCI manifest');
  const mediaType = oci ? MediaType.ociManifest : MediaType.dockerManifest;
  const configDescriptor: Descriptor = {
    mediaType: oci ? MediaType.ociConfig : MediaType.dockerConfig,
    digest: digestOf(config),
    size: config.byteLength,
  };
  const layerDescriptors = layers.map(
    (layer): Descriptor => ({
      mediaType: zstd ? MediaType.ociLayerZstd : oci ? MediaType.ociLayerGzip : MediaType.dockerLayerGzip,
      digest: layer.digest,
      size: layer.size,
      ...(oci && layer.annotations ? { annotations: layer.annotations } : {}),
    }),
  );
  const manifest: ImageManifest = { schemaVersion: 2, mediaType, config: configDescriptor, layers: layerDescriptors };
  if (oci && annotations) manifest.annotations = annotations;
  const bytes = encodeJson(manifest);
  return { manifest, bytes, digest: digestOf(bytes), mediaType };
}
