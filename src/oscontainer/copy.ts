/**
 * Pull / mirror an image between registries (or into an OCI layout directory), preserving digests: manifests
 * are copied byte for byte, blobs are streamed to a temp file with digest verification and resumed with Range
 * after a broken connection, then uploaded (or mounted / skipped when the destination already has them).
 * From an index (manifest list), only the linux/amd64 image (or `platforms`' images) is copied unless `all`.
 */
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import type { Descriptor, Platform } from '../oci/descriptor.js';
import { digestOf } from '../oci/digest.js';
import { parseLocalSource } from '../oci/local-source.js';
import type { ImageIndex, ImageManifest } from '../oci/manifest.js';
import { isIndexType, MediaType } from '../oci/media-types.js';
import { chooseInstance, formatPlatform, NODE_PLATFORM } from '../oci/platform.js';
import { type ImageReference, parseReference } from '../oci/reference.js';
import { type CopySource, layoutSource } from './layout-source.js';
import { RegistryClient, type RegistryClientOptions } from './registry-client.js';

export interface CopyOptions {
  /** Copy every platform of an index, and the index (default: the linux/amd64 image only). */
  all?: boolean;
  /** Without `all`: copy these platforms' images of an index (the first a linux/amd64 node gets names the copy). */
  platforms?: readonly Platform[];
  /** Plain HTTP for non-loopback registries. */
  insecure?: boolean;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  bus?: EventBus;
  /** Client settings for the source (tests use small retry counts). */
  source?: RegistryClientOptions;
  destination?: RegistryClientOptions;
  workDir?: string;
}

export interface CopyResult {
  /** Digest of the top-level manifest written to the destination (same as the source's). */
  digest: string;
  /** Every manifest digest copied (the index and its children). */
  manifests: string[];
  blobsCopied: number;
  blobsSkipped: number;
}

/** Where images go: a registry repository or an OCI image layout directory. */
interface Sink {
  describe: string;
  hasBlob(digest: string): Promise<boolean>;
  /** Cross-repository mount within one registry, when possible. */
  mountBlob?(digest: string): Promise<boolean>;
  putBlob(digest: string, size: number, path: string): Promise<void>;
  putManifest(reference: string, bytes: Buffer, mediaType: string, top: boolean): Promise<void>;
  finish(): Promise<void>;
}

function registrySink(source: ImageReference, target: ImageReference, options: CopyOptions, bus?: EventBus): Sink {
  const client = new RegistryClient(target.registry, {
    insecure: options.insecure,
    env: options.env,
    signal: options.signal,
    ...options.destination,
  });
  const ref = `${target.registry}/${target.repository}`;
  return {
    describe: ref,
    hasBlob: async (digest) => (await client.hasBlob(target.repository, digest)) !== null,
    ...(source.registry === target.registry && source.repository !== target.repository
      ? { mountBlob: (digest: string) => client.mountBlob(target.repository, digest, source.repository) }
      : {}),
    putBlob: (digest, size, path) =>
      client.uploadBlob(target.repository, digest, createReadStream(path, { highWaterMark: 1 << 20 }), (sent) =>
        bus?.emit({ kind: 'image.progress', ref, phase: `push ${digest.slice(7, 19)}`, done: sent, total: size }),
      ),
    putManifest: async (reference, bytes, mediaType) => {
      await client.putManifest(target.repository, reference, bytes, mediaType);
    },
    finish: async () => {},
  };
}

/** OCI image layout (image-layout.md): `oci-layout`, `blobs/sha256/…`, `index.json` naming the image by tag. */
function layoutSink(dir: string, tag: string | undefined): Sink {
  const blobPath = (digest: string) => join(dir, 'blobs', ...digest.split(':'));
  let top: Descriptor | undefined;
  return {
    describe: `oci:${dir}`,
    hasBlob: async (digest) => (await stat(blobPath(digest)).catch(() => null)) !== null,
    putBlob: async (digest, _size, path) => {
      await mkdir(join(dir, 'blobs', digest.split(':')[0]!), { recursive: true });
      await copyFile(path, blobPath(digest));
    },
    putManifest: async (_reference, bytes, mediaType, isTop) => {
      const digest = digestOf(bytes);
      await mkdir(join(dir, 'blobs', 'sha256'), { recursive: true });
      await writeFile(blobPath(digest), bytes);
      if (isTop) {
        top = {
          mediaType,
          digest,
          size: bytes.byteLength,
          ...(tag ? { annotations: { 'org.opencontainers.image.ref.name': tag } } : {}),
        };
      }
    },
    finish: async () => {
      await writeFile(join(dir, 'oci-layout'), `${JSON.stringify({ imageLayoutVersion: '1.0.0' })}\n`);
      const indexPath = join(dir, 'index.json');
      let index: ImageIndex = { schemaVersion: 2, mediaType: MediaType.ociIndex, manifests: [] };
      try {
        index = JSON.parse(await readFile(indexPath, 'utf8')) as ImageIndex;
      } catch {
        // new layout
      }
      const name = top?.annotations?.['org.opencontainers.image.ref.name'];
      index.manifests = index.manifests.filter(
        (m) => m.digest !== top?.digest && (!name || m.annotations?.['org.opencontainers.image.ref.name'] !== name),
      );
      if (top) index.manifests.push(top);
      await writeFile(`${indexPath}.tmp`, `${JSON.stringify(index, null, 2)}\n`);
      await rename(`${indexPath}.tmp`, indexPath);
    },
  };
}

/** A registry repository as a copy source: blobs resume with Range after a broken connection. */
function registryReader(src: ImageReference, options: CopyOptions): CopySource {
  const client = new RegistryClient(src.registry, {
    insecure: options.insecure,
    env: options.env,
    signal: options.signal,
    ...options.source,
  });
  return {
    describe: `${src.registry}/${src.repository}`,
    top: src.digest ?? src.tag ?? 'latest',
    getManifest: (reference) => client.getManifest(src.repository, reference),
    fetchBlob: (descriptor, path, onProgress) =>
      client.downloadBlob(src.repository, descriptor.digest, descriptor.size, path, onProgress),
  };
}

/**
 * The entries of an index to copy without `all`: those of `platforms`, or the one a linux/amd64 node gets
 * (oci/platform.ts chooseInstance, as containers/image chooses). The index itself is then not copied: a registry
 * that checks an index's children (the embedded one, distribution) refuses an index naming some it lacks.
 */
function pickPlatforms(index: ImageIndex, source: string, platforms: readonly Platform[] | undefined): Descriptor[] {
  const wanted = platforms ?? [NODE_PLATFORM];
  const picked = wanted.map((platform) => chooseInstance(index.manifests, platform));
  const missing = wanted.filter((_, i) => !picked[i]);
  if (missing.length > 0) {
    const have = index.manifests.map((m) => formatPlatform(m.platform)).join(', ');
    throw new DevpivotError(
      'NO_MATCHING_PLATFORM',
      `${source} has no ${missing.map(formatPlatform).join(' or ')} image (it has: ${have || 'none'})`,
      { hint: platforms ? `name platforms it has (${have})` : 'pass --all to copy every platform' },
    );
  }
  // The node's own first, so that it is the one the copy names (result.digest).
  const unique = [...new Set(picked as Descriptor[])];
  const node = chooseInstance(unique);
  return node ? [node, ...unique.filter((entry) => entry !== node)] : unique;
}

/**
 * Copy `source` (a registry reference) to `destination` (a registry reference or `oci:DIR[:TAG]`).
 *
 * Events (docs/ARCHITECTURE.md "Events and their contracts"; this is the only emitter of `image.pulled`):
 * exactly one `image.pulled` per call, once the destination holds the top manifest (for an index copied with
 * `all`, the index: its children emit nothing); none when the copy fails. `image.progress` reports blobs as they
 * are downloaded and uploaded.
 */
export async function copyImage(source: string, destination: string, options: CopyOptions = {}): Promise<CopyResult> {
  const local = source.startsWith('oci:') ? parseLocalSource(source) : undefined;
  // A layout source keeps no registry name: a registry sink mounts nothing and keeps the destination's tag.
  const src: ImageReference =
    local?.transport === 'oci'
      ? { registry: '', repository: '', ...(local.ref ? { tag: local.ref } : {}) }
      : parseReference(source);
  const reader = local?.transport === 'oci' ? await layoutSource(local.path, local.ref) : registryReader(src, options);
  let sink: Sink;
  let destTag: string | undefined;
  if (destination.startsWith('oci:')) {
    const rest = destination.slice(4);
    const colon = rest.lastIndexOf(':');
    const dir = colon > 0 && !rest.slice(colon).includes('/') ? rest.slice(0, colon) : rest;
    destTag = colon > 0 && dir !== rest ? rest.slice(colon + 1) : src.tag;
    sink = layoutSink(dir, destTag);
  } else {
    const dest = parseReference(destination);
    // `--to HOST/REPO` without a tag keeps the source's tag (parseReference defaulted it to latest).
    const explicitTag = /:[\w][\w.-]*$/.test(destination.split('/').pop() ?? '') || destination.includes('@');
    destTag = explicitTag ? dest.tag : src.tag;
    sink = registrySink(src, dest, options, options.bus);
  }
  const work = await mkdtemp(join(options.workDir ?? tmpdir(), 'devpivot-pull-'));
  const result: CopyResult = { digest: '', manifests: [], blobsCopied: 0, blobsSkipped: 0 };
  const ref = reader.describe;
  try {
    const copyBlob = async (descriptor: Descriptor) => {
      if (await sink.hasBlob(descriptor.digest)) {
        result.blobsSkipped++;
        return;
      }
      if (sink.mountBlob && (await sink.mountBlob(descriptor.digest))) {
        result.blobsCopied++;
        return;
      }
      const path = join(work, descriptor.digest.replace(':', '-'));
      await reader.fetchBlob(descriptor, path, (received) =>
        options.bus?.emit({
          kind: 'image.progress',
          ref,
          phase: `pull ${descriptor.digest.slice(7, 19)}`,
          done: received,
          total: descriptor.size,
        }),
      );
      await sink.putBlob(descriptor.digest, descriptor.size, path);
      await rm(path, { force: true });
      result.blobsCopied++;
    };
    const copyManifest = async (reference: string, top: boolean): Promise<string> => {
      const fetched = await reader.getManifest(reference);
      const document = JSON.parse(fetched.bytes.toString('utf8')) as ImageManifest | ImageIndex;
      const mediaType = fetched.mediaType || document.mediaType || MediaType.ociManifest;
      if (isIndexType(mediaType) || 'manifests' in document) {
        const index = document as ImageIndex;
        if (!options.all) {
          const [first, ...rest] = pickPlatforms(index, source, options.platforms);
          for (const child of rest) await copyManifest(child.digest, false);
          return copyManifest(first!.digest, top);
        }
        for (const child of index.manifests) await copyManifest(child.digest, false);
      } else {
        const manifest = document as ImageManifest;
        for (const blob of [manifest.config, ...manifest.layers]) await copyBlob(blob);
      }
      // Children by digest; the top manifest under the tag too, byte for byte so its digest is unchanged.
      await sink.putManifest(top && destTag ? destTag : fetched.digest, fetched.bytes, mediaType, top);
      result.manifests.push(fetched.digest);
      return fetched.digest;
    };
    result.digest = await copyManifest(reader.top, true);
    await sink.finish();
    options.bus?.emit({ kind: 'image.pulled', ref: `${sink.describe}@${result.digest}`, digest: result.digest });
    return result;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
