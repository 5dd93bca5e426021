/** Media types of the Docker v2 schema 2 and OCI image formats (OCI image spec: media-types.md). */
export const MediaType = {
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerManifestList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
  dockerLayerGzip: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

export const MANIFEST_TYPES = [MediaType.dockerManifest, MediaType.ociManifest] as const;
export const INDEX_TYPES = [MediaType.dockerManifestList, MediaType.ociIndex] as const;
/** What we send in Accept when fetching a manifest: every format we understand. */
export const MANIFEST_ACCEPT = [...MANIFEST_TYPES, ...INDEX_TYPES].join(', ');

export function isIndexType(mediaType: string | undefined): boolean {
  return (INDEX_TYPES as readonly string[]).includes(mediaType ?? '');
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { architecture: string; os: string; variant?: string };
  annotations?: Record<string, string>;
}

export interface ImageManifest {
  schemaVersion: 2;
  mediaType?: string;
  config: Descriptor;
  layers: Descriptor[];
  annotations?: Record<string, string>;
}

export interface ImageIndex {
  schemaVersion: 2;
  mediaType?: string;
  manifests: Descriptor[];
}
