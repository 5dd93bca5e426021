/**
 * One-call operations for the engine: build + push an oscontainer, or mirror one, and get back what a node's
 * Ignition needs (digest) and what its pivot should report (commit, version).
 */
import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import type { Platform } from '../oci/descriptor.js';
import { parseLocalSource } from '../oci/local-source.js';
import type { ImageIndex, ImageManifest } from '../oci/manifest.js';
import { chooseInstance, formatPlatform } from '../oci/platform.js';
import { parseReference } from '../oci/reference.js';
import { type BuildOptions, buildOscontainer, type OscontainerFormat } from './build.js';
import { copyImage } from './copy.js';
import { buildDerived, type DerivedBuild } from './derived.js';
import { OSTREE_COMMIT_LABEL } from './image.js';
import { importLocalImage } from './local-image.js';
import { type LocalImageStore, pushOscontainer, pushToStore } from './push.js';
import { RegistryClient } from './registry-client.js';
import { pullScope } from './transport/transport.js';

export interface PublishedImage {
  /** sha256:… of the manifest. */
  digest: string;
  /** `host:port/repo@sha256:…` on this host. */
  pinned: string;
  /** Label com.coreos.ostree-commit. */
  commit: string;
  /** Label version. */
  version: string;
  /** `native` when the image has ostree-ext's bootable label key (what rpm-ostree and bootc require). */
  format: OscontainerFormat;
  /**
   * When `digest` names an index: the digest of its image for a linux/amd64 node (oci/platform.ts), the one
   * bootc and rpm-ostree store and report once booted; its labels are those above.
   */
  instance?: string;
  /** The layers' digests in manifest order (set by buildAndPush). */
  layers?: string[];
}

export interface BuildAndPushOptions extends Omit<BuildOptions, 'ref' | 'bus' | 'signal'> {
  /** `host:port/repo:tag` (an `http://` prefix is accepted and dropped). */
  target: string;
  bus?: EventBus;
  signal?: AbortSignal;
  /**
   * The store of the embedded registry `target` names, when it runs in this process: the push goes straight into
   * it instead of over HTTP to ourselves (measured: the HTTP push of the 61 MB fixture layer peaked at ~140 MiB
   * more RSS, 8 MiB PATCH bodies copied on both ends and collected late; the store's ~34 MiB).
   */
  store?: LocalImageStore;
}

const stripScheme = (ref: string) => ref.replace(/^https?:\/\//, '');

/** Build the oscontainer and push it; the work directory is always removed. */
export async function buildAndPush(options: BuildAndPushOptions): Promise<PublishedImage> {
  const target = stripScheme(options.target);
  const image = await buildOscontainer({ ...options, ref: target });
  try {
    const ref = parseReference(target);
    const pushed = options.store
      ? await pushToStore(
          image,
          options.store,
          { address: ref.registry, repository: ref.repository, ...(ref.tag ? { tag: ref.tag } : {}) },
          { ...(options.bus ? { bus: options.bus } : {}) },
        )
      : await pushOscontainer(image, target, { bus: options.bus, signal: options.signal });
    return {
      digest: pushed.digest,
      pinned: pushed.pinned,
      commit: image.commit,
      version: image.version,
      format: image.format,
      layers: image.layers.map((layer) => layer.digest),
    };
  } finally {
    await image.dispose();
  }
}

/**
 * Mirror `source` (a registry reference, or a local image: oci/local-source.ts) to `target` (a registry
 * reference) and read its oscontainer labels there. Emits copyImage's
 * one `image.pulled` (and nothing more of that kind): callers must not emit their own.
 */
export async function mirrorOscontainer(
  source: string,
  target: string,
  options: {
    bus?: EventBus;
    signal?: AbortSignal;
    env?: NodeJS.ProcessEnv;
    insecure?: boolean;
    platforms?: readonly Platform[];
  } = {},
): Promise<PublishedImage> {
  const dest = parseReference(stripScheme(target));
  const local = parseLocalSource(source);
  // An index is mirrored whole, every digest kept (skopeo copy --all), unless only some platforms are wanted.
  const copy = { ...options, all: !options.platforms };
  const copied = local
    ? await importLocalImage(local, stripScheme(target), copy)
    : await copyImage(source, stripScheme(target), copy);
  const client = new RegistryClient(dest.registry, { signal: options.signal, env: options.env });
  const { image } = await readOscontainer(client, dest.repository, copied.digest, source);
  return { ...image, pinned: `${dest.registry}/${dest.repository}@${copied.digest}` };
}

/**
 * Build a derived image with podman (derived.ts) from `base` (pinned by digest), push it to `target` (a registry
 * reference), and read its labels there: a derived bootable image keeps its base's.
 */
export async function buildDerivedImage(options: DerivedBuild): Promise<PublishedImage> {
  const dest = parseReference(stripScheme(options.target));
  const digest = await buildDerived({ ...options, target: stripScheme(options.target) });
  const client = new RegistryClient(dest.registry, { signal: options.signal, env: options.env });
  const { image } = await readOscontainer(client, dest.repository, digest, options.containerfile);
  const pinned = `${dest.registry}/${dest.repository}@${digest}`;
  options.bus?.emit({ kind: 'image.pushed', ref: pinned, digest });
  return { ...image, pinned };
}

/**
 * An upstream image, through a pull-through cache (docs/PROTOCOLS.md "Mirror mode"): a tag is resolved at the
 * upstream; the manifest and the config are then read through `cache` (`host:port/repo`), which fetches them from
 * the upstream once and keeps them. With `layers`, every layer is read through it too (and dropped here), so the
 * cache holds the whole image; without, the layers stay upstream until a node asks the cache (`prefetch: false`).
 * Filling a cache by reading through it, not by pushing: the cache answers a HEAD for a blob it lacks from the
 * upstream, so a copier would skip the upload and its manifest PUT would be refused.
 */
export async function resolveThroughCache(
  upstreamRef: string,
  upstream: string,
  cache: string,
  options: { signal?: AbortSignal; env?: NodeJS.ProcessEnv; layers?: boolean; bus?: EventBus } = {},
): Promise<PublishedImage> {
  const source = parseReference(stripScheme(upstreamRef));
  let digest = source.digest;
  if (!digest) {
    const url = new URL(upstream);
    const remote = new RegistryClient(url.host, {
      signal: options.signal,
      env: options.env,
      insecure: url.protocol === 'http:',
    });
    digest = (await remote.getManifest(source.repository, source.tag ?? 'latest')).digest;
  }
  const dest = parseReference(`${stripScheme(cache)}@${digest}`);
  const client = new RegistryClient(dest.registry, { signal: options.signal, env: options.env });
  const { image, manifest } = await readOscontainer(client, dest.repository, digest, upstreamRef);
  if (options.layers) {
    const total = manifest.layers.reduce((sum, layer) => sum + layer.size, 0);
    let done = 0;
    let shown = 0;
    const ref = `${dest.registry}/${dest.repository}@${digest}`;
    for (const layer of manifest.layers) {
      const path = `/v2/${dest.repository}/blobs/${layer.digest}`;
      const response = await client.request('GET', path, dest.repository, { scopes: [pullScope(dest.repository)] });
      // The cache verifies the digest while it stores the blob; here the bytes are only counted.
      for await (const chunk of response.body ?? []) {
        done += (chunk as Uint8Array).length;
        if (done - shown < 1 << 20 && done !== total) continue;
        shown = done;
        options.bus?.emit({ kind: 'image.progress', ref, phase: 'caching', done, total });
      }
    }
    options.bus?.emit({ kind: 'image.pulled', ref, digest });
  }
  return { ...image, pinned: `${dest.registry}/${dest.repository}@${digest}` };
}

/** The manifest and oscontainer labels of `repository@digest` in `client`'s registry; `source` names it in errors. */
async function readOscontainer(
  client: RegistryClient,
  repository: string,
  digest: string,
  source: string,
): Promise<{ image: Omit<PublishedImage, 'pinned'>; manifest: ImageManifest }> {
  const top = JSON.parse((await client.getManifest(repository, digest)).bytes.toString('utf8')) as
    | ImageManifest
    | ImageIndex;
  let manifest: ImageManifest;
  let instance: string | undefined;
  if ('manifests' in top) {
    const entry = chooseInstance(top.manifests);
    if (!entry)
      throw new DevpivotError(
        'NO_MATCHING_PLATFORM',
        `${source} is an index without a linux/amd64 image (it has: ${top.manifests.map((m) => formatPlatform(m.platform)).join(', ') || 'none'})`,
        { hint: 'nodes are x86_64: the index needs a linux/amd64 image' },
      );
    instance = entry.digest;
    manifest = JSON.parse((await client.getManifest(repository, instance)).bytes.toString('utf8')) as ImageManifest;
  } else manifest = top;
  const config = JSON.parse((await client.getBlob(repository, manifest.config.digest)).toString('utf8')) as {
    config?: { Labels?: Record<string, string> };
  };
  const labels = config.config?.Labels ?? {};
  // Legacy oscontainers carry com.coreos.ostree-commit; ostree-native (bootable) images carry ostree.commit.
  const commit = labels[OSTREE_COMMIT_LABEL] ?? labels['ostree.commit'];
  if (!commit) {
    throw new DevpivotError('NOT_AN_OSCONTAINER', `${source} has no ${OSTREE_COMMIT_LABEL} label`, {
      hint: 'pivot targets must be oscontainers (devpivot build makes them) or bootable container images',
      exitCode: 2,
    });
  }
  const image: Omit<PublishedImage, 'pinned'> = {
    digest,
    commit,
    version: labels.version ?? labels['org.opencontainers.image.version'] ?? '',
    // ostree-ext's importer tests the label keys only (store.rs, bootc-dev/bootc 534c76ea).
    format: 'ostree.bootable' in labels || 'containers.bootc' in labels ? 'native' : 'legacy',
    ...(instance ? { instance } : {}),
  };
  return { image, manifest };
}
