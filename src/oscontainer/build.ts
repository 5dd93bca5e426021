/**
 * Build the legacy oscontainer (docs/PROTOCOLS.md "legacy (openshift/pivot)") from an ostree commit: export the
 * commit alone into a fresh archive repo, stream it as the `/srv/repo` layer (deterministic tar → parallel gzip,
 * sha256 of both while streaming), then the image config and manifest. Everything lands in a work directory,
 * ready to push.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import { digestOf, digestOfHash, sha256Hash } from '../oci/digest.js';
import { type BuiltManifest, encodeJson, imageConfig, imageManifest, type LayerInfo } from './image.js';
import { commitDirectory, exportCommit, resolveCommit } from './ostree.js';
import { type GzipOptions, parallelGzip } from './parallel-gzip.js';
import { planTar, tarDirectory } from './tar-layer.js';

export interface BuildSource {
  /** An ostree repository and a commit checksum or ref in it. */
  repo?: string;
  commit?: string;
  /** Or a root filesystem tree, committed first into a temporary repo (needs `version`). */
  fromDir?: string;
}

export interface BuildOptions extends BuildSource {
  /** Overrides (or supplies, when the commit has none) the `version` label. */
  version?: string;
  /** OCI manifest and media types instead of Docker v2 schema 2. */
  oci?: boolean;
  labels?: Record<string, string>;
  gzip?: GzipOptions;
  /** Parent of the work directory (default: the system temp dir). */
  workDir?: string;
  bus?: EventBus;
  /** Name used in progress events (e.g. the push target). */
  ref?: string;
  /** Checked between phases: an aborted build stops and removes its work directory. */
  signal?: AbortSignal;
}

export interface OscontainerImage {
  commit: string;
  version: string;
  /** Manifest digest: what the image is referenced by. */
  digest: string;
  manifest: BuiltManifest;
  config: { bytes: Buffer; digest: string };
  layer: LayerInfo & { path: string };
  /** The work directory holding `layer.tar.gz` (and the exported repo); remove with `dispose()`. */
  dir: string;
  dispose(): Promise<void>;
}

export interface LayerOptions {
  gzip?: GzipOptions;
  /** Called with the uncompressed bytes so far and the exact total. */
  onProgress?: (uncompressedBytes: number, total: number) => void;
}

/** Write `repoDir` as the `srv/repo` layer to `outPath`; returns its digests and size. */
export async function writeRepoLayer(repoDir: string, outPath: string, options: LayerOptions = {}): Promise<LayerInfo> {
  const diffHash = sha256Hash();
  const blobHash = sha256Hash();
  let uncompressed = 0;
  let size = 0;
  const tarOptions = { prefix: 'srv/repo', exclude: (path: string) => path === '.lock' };
  const plan = await planTar(repoDir, tarOptions);
  async function* tee(): AsyncGenerator<Buffer> {
    for await (const chunk of tarDirectory(repoDir, tarOptions, plan)) {
      diffHash.update(chunk);
      uncompressed += chunk.byteLength;
      options.onProgress?.(uncompressed, plan.size);
      yield chunk;
    }
  }
  const out = createWriteStream(outPath);
  try {
    for await (const chunk of parallelGzip(tee(), options.gzip)) {
      blobHash.update(chunk);
      size += chunk.byteLength;
      if (!out.write(chunk)) await once(out, 'drain');
    }
  } finally {
    out.end();
    await once(out, 'close');
  }
  return { digest: digestOfHash(blobHash), diffId: digestOfHash(diffHash), size };
}

export async function buildOscontainer(options: BuildOptions): Promise<OscontainerImage> {
  const ref = options.ref ?? 'oscontainer';
  const progress = (phase: string, done: number, total: number | null) =>
    options.bus?.emit({ kind: 'image.progress', ref, phase, done, total });
  const dir = await mkdtemp(join(options.workDir ?? tmpdir(), 'devpivot-build-'));
  const dispose = () => rm(dir, { recursive: true, force: true });
  let committed: string | undefined;
  try {
    let repo = options.repo;
    let commitOrRef = options.commit;
    if (options.fromDir) {
      if (!options.version) {
        throw new DevpivotError('BUILD_NEEDS_VERSION', `building from directory ${options.fromDir} needs a version`, {
          hint: 'pass --version, e.g. --version 2.0',
          exitCode: 2,
        });
      }
      progress('commit', 0, null);
      const made = await commitDirectory(options.fromDir, { version: options.version, workDir: dir });
      committed = made.repo;
      repo = made.repo;
      commitOrRef = made.commit;
    }
    if (!repo || !commitOrRef) {
      throw new DevpivotError('BUILD_NO_SOURCE', 'nothing to build: no ostree repo and commit, and no directory', {
        hint: 'pass --ostree-repo REPO --commit COMMIT, --from-dir ROOTFS --version V, or --fixture N',
        exitCode: 2,
      });
    }
    const info = await resolveCommit(repo, commitOrRef);
    const version = options.version ?? info.version;
    if (!version) {
      throw new DevpivotError(
        'BUILD_NEEDS_VERSION',
        `ostree commit ${info.commit} in ${repo} has no 'version' metadata`,
        {
          hint: 'pass --version, or commit with --add-metadata-string=version=V',
          exitCode: 2,
        },
      );
    }
    options.signal?.throwIfAborted();
    progress('export', 0, null);
    const exported = join(dir, 'repo');
    await exportCommit(repo, info.commit, exported);
    if (committed) await rm(committed, { recursive: true, force: true });
    options.signal?.throwIfAborted();
    const layerPath = join(dir, 'layer.tar.gz');
    let last = 0;
    const layer = await writeRepoLayer(exported, layerPath, {
      gzip: options.gzip,
      onProgress: (done, total) => {
        // About 100 progress events per layer, not one per tar block.
        if (done - last >= total / 100 || done === total) {
          last = done;
          progress('layer', done, total);
        }
      },
    });
    const configBytes = encodeJson(imageConfig({ commit: info.commit, version, labels: options.labels }, layer));
    const manifest = imageManifest(configBytes, layer, options.oci ?? false);
    options.bus?.emit({ kind: 'image.built', ref, digest: manifest.digest, commit: info.commit, version });
    return {
      commit: info.commit,
      version,
      digest: manifest.digest,
      manifest,
      config: { bytes: configBytes, digest: digestOf(configBytes) },
      layer: { ...layer, path: layerPath },
      dir,
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}
