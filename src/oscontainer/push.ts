/**
 * Push a built oscontainer to a registry over HTTP: blobs first (HEAD to skip what the registry has, an
 * optional cross-repository mount, else a chunked upload), then the manifest under the tag. Returns the digest.
 */
import { createReadStream } from 'node:fs';
import type { EventBus } from '../core/bus.js';
import { parseReference } from '../oci/reference.js';
import type { OscontainerImage } from './build.js';
import { RegistryClient, type RegistryClientOptions } from './registry-client.js';

export interface PushOptions extends RegistryClientOptions {
  bus?: EventBus;
  /** A repository on the same registry that may already hold the blobs (cross-repository mount). */
  mountFrom?: string;
}

export interface PushResult {
  /** `host/repo@sha256:…`: how to reference the pushed image. */
  pinned: string;
  digest: string;
}

async function* single(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes;
}

export async function pushOscontainer(
  image: OscontainerImage,
  target: string,
  options: PushOptions = {},
): Promise<PushResult> {
  const ref = parseReference(target);
  const client = new RegistryClient(ref.registry, options);
  const blobs = [
    ...image.layers.map((layer) => ({
      digest: layer.digest,
      size: layer.size,
      open: () => createReadStream(layer.path, { highWaterMark: 1 << 20 }),
    })),
    { digest: image.config.digest, size: image.config.bytes.byteLength, open: () => single(image.config.bytes) },
  ];
  for (const blob of blobs) {
    if ((await client.hasBlob(ref.repository, blob.digest)) !== null) {
      options.bus?.emit({ kind: 'image.progress', ref: target, phase: 'push', done: blob.size, total: blob.size });
      continue;
    }
    if (options.mountFrom && (await client.mountBlob(ref.repository, blob.digest, options.mountFrom))) continue;
    await client.uploadBlob(ref.repository, blob.digest, blob.open(), (sent) =>
      options.bus?.emit({ kind: 'image.progress', ref: target, phase: 'push', done: sent, total: blob.size }),
    );
  }
  const digest = await client.putManifest(
    ref.repository,
    ref.tag ?? image.digest,
    image.manifest.bytes,
    image.manifest.mediaType,
  );
  const pinned = `${ref.registry}/${ref.repository}@${digest}`;
  options.bus?.emit({ kind: 'image.pushed', ref: pinned, digest });
  return { pinned, digest };
}

/** The part of the embedded registry's store that a local push needs (src/registry `RegistryStore`). */
export interface LocalImageStore {
  hasBlob(digest: string): Promise<boolean>;
  putBlob(
    source: AsyncIterable<Uint8Array> | Uint8Array,
    expectedDigest?: string,
    expectedSize?: number,
  ): Promise<unknown>;
  putManifest(repo: string, reference: string, bytes: Uint8Array, mediaType?: string): Promise<{ digest: string }>;
}

/**
 * Push straight into the embedded registry's store, in process: no HTTP, same result (the store verifies
 * digests and sizes as its HTTP handler does). `address` (host:port) only names the image in the result.
 */
export async function pushToStore(
  image: OscontainerImage,
  store: LocalImageStore,
  target: { address: string; repository: string; tag?: string },
  options: { bus?: EventBus } = {},
): Promise<PushResult> {
  for (const layer of image.layers) {
    if (await store.hasBlob(layer.digest)) continue;
    await store.putBlob(createReadStream(layer.path, { highWaterMark: 1 << 20 }), layer.digest, layer.size);
  }
  if (!(await store.hasBlob(image.config.digest))) {
    await store.putBlob(image.config.bytes, image.config.digest, image.config.bytes.byteLength);
  }
  const { digest } = await store.putManifest(
    target.repository,
    target.tag ?? image.digest,
    image.manifest.bytes,
    image.manifest.mediaType,
  );
  const pinned = `${target.address}/${target.repository}@${digest}`;
  options.bus?.emit({ kind: 'image.pushed', ref: pinned, digest });
  return { pinned, digest };
}
