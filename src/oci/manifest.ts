/** The two manifest documents (image-spec manifest.md and image-index.md; Docker v2 schema 2 has the same shape). */
import type { Descriptor } from './descriptor.js';

export interface ImageManifest {
  schemaVersion: 2;
  mediaType?: string;
  config: Descriptor;
  layers: Descriptor[];
  subject?: Descriptor;
  artifactType?: string;
  annotations?: Record<string, string>;
}

export interface ImageIndex {
  schemaVersion: 2;
  mediaType?: string;
  manifests: Descriptor[];
  subject?: Descriptor;
  artifactType?: string;
  annotations?: Record<string, string>;
}
