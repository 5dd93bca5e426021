/** Public API of the oscontainer module (used by the engine and the build / pull commands). */

export { MediaType } from '../oci/media-types.js';
export { byDigest, formatReference, type ImageReference, parseReference } from '../oci/reference.js';
export {
  type BuildAndPushOptions,
  buildAndPush,
  buildDerivedImage,
  mirrorOscontainer,
  type PublishedImage,
  resolveThroughCache,
} from './api.js';
export {
  type BuildOptions,
  buildOscontainer,
  OSCONTAINER_FORMATS,
  type OscontainerFormat,
  type OscontainerImage,
  writeRepoLayer,
} from './build.js';
export { type CopyOptions, type CopyResult, copyImage } from './copy.js';
export { FIXED_CREATED, imageConfig, imageManifest, OSTREE_COMMIT_LABEL } from './image.js';
export { type BuiltMcoImage, buildMcoImage, MCO_APPLETS, type McoImageSources, pushMcoImage } from './mco-image.js';
export { NativeLabel } from './native/image-config.js';
export { commitDirectory, exportCommit, resolveCommit } from './ostree.js';
export { type GzipOptions, parallelGzip } from './parallel-gzip.js';
export { type LocalImageStore, type PushOptions, type PushResult, pushOscontainer, pushToStore } from './push.js';
export { RegistryClient, type RegistryClientOptions } from './registry-client.js';
export { type Credentials, findCredentials } from './transport/credentials.js';
export { isLoopback } from './transport/scheme.js';
export { type UpstreamClient, upstreamClient } from './transport/upstream-client.js';
