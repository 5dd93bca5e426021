/** A content descriptor (image-spec descriptor.md): what a manifest, an index or the referrers API points at. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  artifactType?: string;
  annotations?: Record<string, string>;
  urls?: string[];
  platform?: Platform;
}

/** The platform of an index entry (image-spec image-index.md). */
export interface Platform {
  architecture: string;
  os: string;
  variant?: string;
  'os.version'?: string;
  'os.features'?: string[];
}
