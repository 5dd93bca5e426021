/**
 * Build the ostree-native (bootable) oscontainer's layers, config and manifest from a resolved commit
 * (docs/PROTOCOLS.md "ostree-native (bootable): the ostree-ext container format").
 *
 * Without `layers`: one layer, what `ostree container encapsulate` writes without package data. With `layers: N`,
 * the commit is chunked as rpm-ostree's `container-encapsulate --max-layers N` has ostree-ext do it
 * (encapsulate.rs `export_chunked`, bootc-dev/bootc 534c76ea): its objects mapped to packages (`components.ts`),
 * the packages packed into N bins (`packing.ts`), the image's first layer the commit with its metadata and
 * whatever no bin took, then one layer per bin, annotated `ostree.components` with the bin's package names
 * (sorted, comma-separated). A chunked image is always an OCI one: Docker schema 2 has no layer annotations.
 *
 * Objects are read in place from an archive-mode source repo; any other repo is first exported to an archive
 * repo in the work directory, as the legacy builder does. Nothing else is copied: each layer is streamed straight
 * into parallel gzip, or into zstd (`compression: zstd`).
 */
import { join } from 'node:path';
import { digestOf } from '../../oci/digest.js';
import { type BuiltManifest, encodeJson, type LayerInfo, layeredManifest } from '../image.js';
import { type LayerCompression, writeLayerFile } from '../layer-file.js';
import { exportCommit } from '../ostree.js';
import type { GzipOptions } from '../parallel-gzip.js';
import { ArchiveRepo, repoMode } from './archive-repo.js';
import { chunkLayers } from './chunk-layers.js';
import { commitDescription, nativeImageConfig, nativeLabels } from './image-config.js';
import { type LayerPlan, planLayer } from './layer-plan.js';
import { streamLayer } from './layer-tar.js';

export interface NativeBuildInput {
  repo: string;
  commit: string;
  version: string;
  /** Work directory (exists): holds the layer files and, for non-archive sources, the exported repo. */
  dir: string;
  oci: boolean;
  labels?: Record<string, string>;
  gzip?: GzipOptions;
  /** Default gzip; zstd makes the image an OCI one (Docker schema 2 has no zstd layer type). */
  compression?: LayerCompression;
  /** Chunk into this many bins (ostree-ext's max layers; at least 4). */
  layers?: number;
  /** With `layers`: the package of each file ("NAME VERSION PATH" lines: the fixture's `components`). */
  components?: string;
  onProgress?: (uncompressedBytes: number, total: number) => void;
  /** Called once the source is readable, before the layer (the caller may drop a temporary source then). */
  onPhase?: (phase: 'export' | 'layer') => void;
}

export type NativeLayer = LayerInfo & { path: string; annotations?: Record<string, string> };

export interface NativeBuild {
  /** In manifest order: the commit layer first. */
  layers: NativeLayer[];
  config: { bytes: Buffer; digest: string };
  manifest: BuiltManifest;
}

/** An archive repo holding the commit's objects: the source itself when it is one. */
async function archiveSource(repo: string, commit: string, dir: string, onPhase?: NativeBuildInput['onPhase']) {
  const { mode, parent } = await repoMode(repo);
  if ((mode === 'archive' || mode === 'archive-z2') && parent === null) return new ArchiveRepo(repo);
  onPhase?.('export');
  const exported = join(dir, 'repo');
  await exportCommit(repo, commit, exported);
  return new ArchiveRepo(exported);
}

interface PlannedLayer {
  plan: LayerPlan;
  createdBy: string;
  annotations?: Record<string, string>;
}

export async function buildNativeImage(input: NativeBuildInput): Promise<NativeBuild> {
  const source = await archiveSource(input.repo, input.commit, input.dir, input.onPhase);
  const plan = await planLayer(source, input.commit);
  const description = commitDescription({ commit: input.commit, object: plan.commit });
  const planned: PlannedLayer[] =
    input.layers === undefined
      ? [{ plan, createdBy: description }]
      : await chunkLayers(plan, { bins: input.layers, components: input.components, description });
  const zstd = input.compression === 'zstd';
  const oci = input.oci || input.layers !== undefined || zstd;
  input.onPhase?.('layer');
  const total = planned.reduce((sum, layer) => sum + layer.plan.size, 0);
  let before = 0;
  const layers: NativeLayer[] = [];
  for (const [i, layer] of planned.entries()) {
    const suffix = zstd ? 'tar.zst' : 'tar.gz';
    const path = join(input.dir, i === 0 ? `layer.${suffix}` : `chunk-${i}.${suffix}`);
    const offset = before;
    const written = await writeLayerFile(streamLayer(source, layer.plan), path, {
      gzip: input.gzip,
      ...(zstd ? { compression: 'zstd' as const } : {}),
      total: layer.plan.size,
      onProgress: (done) => input.onProgress?.(offset + done, total),
    });
    before += layer.plan.size;
    layers.push({ ...written, path, ...(layer.annotations ? { annotations: layer.annotations } : {}) });
  }
  const meta = { commit: input.commit, object: plan.commit, version: input.version, labels: input.labels };
  const history = layers.map((layer, i) => ({ diffId: layer.diffId, createdBy: planned[i]!.createdBy }));
  const configBytes = encodeJson(nativeImageConfig(meta, history));
  // encapsulate.rs also sets the labels as the manifest's annotations; Docker schema 2 has no field for them.
  const annotations = oci ? nativeLabels(meta, layers.at(-1)!.diffId) : undefined;
  const manifest = layeredManifest(configBytes, layers, oci, annotations, zstd);
  return { layers, config: { bytes: configBytes, digest: digestOf(configBytes) }, manifest };
}
