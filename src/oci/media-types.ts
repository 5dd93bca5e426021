/**
 * OCI and Docker media types, the one vocabulary of the registry and the client (image-spec media-types.md;
 * after go-containerregistry pkg/v1/types/types.go @1d72467: one set of names, predicates for each family).
 */
export const MediaType = {
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  ociLayerZstd: 'application/vnd.oci.image.layer.v1.tar+zstd',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerManifestList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
  dockerLayerGzip: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
} as const;
export type MediaType = (typeof MediaType)[keyof typeof MediaType];

/** Manifests of one image (config + layers): OCI image manifest, Docker v2 schema 2. */
export const IMAGE_MANIFEST_TYPES: readonly string[] = [MediaType.dockerManifest, MediaType.ociManifest];
/** Manifests that list other manifests: OCI image index, Docker manifest list. */
export const INDEX_TYPES: readonly string[] = [MediaType.dockerManifestList, MediaType.ociIndex];
/** Every manifest type the registry stores and serves: image manifests and indexes. */
export const ANY_MANIFEST_TYPES: readonly string[] = [
  MediaType.ociManifest,
  MediaType.ociIndex,
  MediaType.dockerManifest,
  MediaType.dockerManifestList,
];

export function isImageManifestType(mediaType: string | undefined): boolean {
  return IMAGE_MANIFEST_TYPES.includes(mediaType ?? '');
}

export function isIndexType(mediaType: string | undefined): boolean {
  return INDEX_TYPES.includes(mediaType ?? '');
}

export function isAnyManifestType(mediaType: string | undefined): boolean {
  return ANY_MANIFEST_TYPES.includes(mediaType ?? '');
}

/** Layers that live elsewhere (image-spec "Non-distributable layers", Docker foreign layers) are never pushed. */
export function isDistributable(mediaType: string): boolean {
  return !/foreign|nondistributable/.test(mediaType);
}

/** A Content-Type or Accept entry without its parameters (`; charset=...`), lowercased. */
export function bareMediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}
