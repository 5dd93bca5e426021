/** The embedded OCI registry: public surface for the engine, oscontainer and CLI. */

export type { Descriptor } from '../oci/descriptor.js';
export { digestOf } from '../oci/digest.js';
export { MediaType } from '../oci/media-types.js';
export { isRepositoryName, isTag } from '../oci/names.js';
export type { RegistryFaults } from './blob-stream.js';
export { parseDigest } from './digest.js';
export { RegistryError, type RegistryErrorCode } from './errors.js';
export { collectGarbage, type GcOptions, type GcResult } from './gc.js';
export { createRegistry, type RegistryListener, type RegistryOptions } from './handler.js';
export {
  PullThrough,
  type PullThroughOptions,
  type PullThroughStats,
} from './pull-through/pull-through.js';
export type { Upstream } from './pull-through/upstream.js';
export { type RunningRegistry, type StartRegistryOptions, startRegistry } from './server.js';
export {
  type BlobInfo,
  DEFAULT_UPLOAD_TTL_MS,
  RegistryStore,
  type StoredManifest,
  type StoreOptions,
} from './store.js';
