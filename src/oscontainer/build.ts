/**
 * Build an oscontainer from an ostree commit, in either format (docs/PROTOCOLS.md "Oscontainer formats"):
 * - `legacy` (default): export the commit alone into a fresh archive repo and stream it as the `/srv/repo` layer;
 * - `native`: the ostree-ext container format, built by `native/build.ts`.
 * Either way the layer is a deterministic tar → parallel gzip with sha256 of both while streaming, then the image
 * config and manifest. Everything lands in a work directory, ready to push.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import { digestOf } from '../oci/digest.js';
/** `legacy`: `/srv/repo` (pivot, MCO ≤ 4.13); `native`: ostree-ext's bootable format (rpm-ostree, bootc). */
import type { OscontainerFormat } from '../oci/format.js';
import { type BuiltManifest, encodeJson, imageConfig, imageManifest, type LayerInfo } from './image.js';
import { type LayerCompression, writeLayerFile } from './layer-file.js';
import { buildNativeImage } from './native/build.js';
import { commitDirectory, exportCommit, resolveCommit } from './ostree.js';
import type { GzipOptions } from './parallel-gzip.js';
import { planTar, tarDirectory } from './tar-layer.js';

export { OSCONTAINER_FORMATS, type OscontainerFormat } from '../oci/format.js';

export interface BuildSource {
  /** An ostree repository and a commit checksum or ref in it. */
  repo?: string;
  commit?: string;
  /** Or a root filesystem tree, committed first into a temporary repo (needs `version`). */
  fromDir?: string;
}

export interface BuildOptions extends BuildSource {
  /** Default `legacy`. */
  format?: OscontainerFormat;
  /** Overrides (or supplies, when the commit has none) the `version` label. */
  version?: string;
  /** OCI manifest and media types instead of Docker v2 schema 2. */
  oci?: boolean;
  labels?: Record<string, string>;
  gzip?: GzipOptions;
  /** native only: the layers' compression (default gzip; zstd: an OCI image, docs/PROTOCOLS.md "Layer compression"). */
  compression?: LayerCompression;
  /** Parent of the work directory (default: the system temp dir). */
  workDir?: string;
  bus?: EventBus;
  /** Name used in progress events (e.g. the push target). */
  ref?: string;
  /** Checked between phases: an aborted build stops and removes its work directory. */
  signal?: AbortSignal;
  /** native only: chunk into this many layers (ostree-ext's max layers), by the packages `components` lists. */
  layers?: number;
  components?: string;
}

export interface OscontainerImage {
  format: OscontainerFormat;
  commit: string;
  version: string;
  /** Manifest digest: what the image is referenced by. */
  digest: string;
  manifest: BuiltManifest;
  config: { bytes: Buffer; digest: string };
  /** The first layer (the only one, unless the image is chunked). */
  layer: LayerInfo & { path: string };
  /** Every layer, in manifest order. */
  layers: (LayerInfo & { path: string })[];
  /** The work directory holding the layer files (and any exported repo); remove with `dispose()`. */
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
  const tarOptions = { prefix: 'srv/repo', exclude: (path: string) => path === '.lock' };
  const plan = await planTar(repoDir, tarOptions);
  return writeLayerFile(tarDirectory(repoDir, tarOptions, plan), outPath, {
    gzip: options.gzip,
    total: plan.size,
    onProgress: options.onProgress,
  });
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
      const made = await commitDirectory(options.fromDir, {
        version: options.version,
        workDir: dir,
        signal: options.signal,
      });
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
    const info = await resolveCommit(repo, commitOrRef, options.signal);
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
    const format = options.format ?? 'legacy';
    if (options.compression === 'zstd' && format !== 'native')
      throw new DevpivotError('USAGE', 'only a native image can have zstd layers', {
        hint: "openshift/pivot's legacy format is read as gzip: drop compression zstd, or add --format native",
        exitCode: 2,
      });
    if (options.layers !== undefined && format !== 'native')
      throw new DevpivotError('USAGE', 'only a native image can be chunked into layers', {
        hint: 'add --format native (format: native), or drop --layers',
        exitCode: 2,
      });
    let last = 0;
    const onProgress = (done: number, total: number) => {
      // About 100 progress events per layer, not one per tar block.
      if (done - last >= total / 100 || done === total) {
        last = done;
        progress('layer', done, total);
      }
    };
    let layers: (LayerInfo & { path: string })[];
    let configBytes: Buffer;
    let manifest: BuiltManifest;
    if (format === 'native') {
      const built = await buildNativeImage({
        repo,
        commit: info.commit,
        version,
        dir,
        oci: options.oci ?? false,
        labels: options.labels,
        gzip: options.gzip,
        ...(options.compression ? { compression: options.compression } : {}),
        ...(options.layers !== undefined ? { layers: options.layers } : {}),
        ...(options.components ? { components: options.components } : {}),
        onProgress,
        onPhase: (phase) => {
          options.signal?.throwIfAborted();
          progress(phase, 0, null);
        },
      });
      ({ layers, manifest } = built);
      configBytes = built.config.bytes;
    } else {
      progress('export', 0, null);
      const exported = join(dir, 'repo');
      await exportCommit(repo, info.commit, exported, options.signal);
      if (committed) await rm(committed, { recursive: true, force: true });
      options.signal?.throwIfAborted();
      const layerPath = join(dir, 'layer.tar.gz');
      const layer = {
        ...(await writeRepoLayer(exported, layerPath, { gzip: options.gzip, onProgress })),
        path: layerPath,
      };
      configBytes = encodeJson(imageConfig({ commit: info.commit, version, labels: options.labels }, layer));
      manifest = imageManifest(configBytes, layer, options.oci ?? false);
      layers = [layer];
    }
    if (committed) await rm(committed, { recursive: true, force: true });
    options.bus?.emit({ kind: 'image.built', ref, digest: manifest.digest, commit: info.commit, version });
    return {
      format,
      commit: info.commit,
      version,
      digest: manifest.digest,
      manifest,
      config: { bytes: configBytes, digest: digestOf(configBytes) },
      layer: layers[0]!,
      layers,
      dir,
      dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}
