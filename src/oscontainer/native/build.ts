/**
 * Build the ostree-native (bootable) oscontainer's layer, config and manifest from a resolved commit
 * (docs/PROTOCOLS.md "ostree-native (bootable): the ostree-ext container format"). One layer: ostree-ext's
 * optional chunking into several layers (`chunking.rs` `process_mapping`, driven by rpm-ostree's package
 * metadata) has no package data to work from here, and a single-chunk image is what `ostree container
 * encapsulate` writes without it.
 *
 * Objects are read in place from an archive-mode source repo; any other repo is first exported to an archive
 * repo in the work directory, as the legacy builder does. Nothing else is copied: the layer is streamed straight
 * into parallel gzip.
 */
import { join } from 'node:path';
import { digestOf } from '../../oci/digest.js';
import { type BuiltManifest, encodeJson, imageManifest, type LayerInfo } from '../image.js';
import { writeLayerFile } from '../layer-file.js';
import { exportCommit } from '../ostree.js';
import type { GzipOptions } from '../parallel-gzip.js';
import { ArchiveRepo, repoMode } from './archive-repo.js';
import { nativeImageConfig, nativeLabels } from './image-config.js';
import { planLayer } from './layer-plan.js';
import { streamLayer } from './layer-tar.js';

export interface NativeBuildInput {
  repo: string;
  commit: string;
  version: string;
  /** Work directory (exists): holds `layer.tar.gz` and, for non-archive sources, the exported repo. */
  dir: string;
  oci: boolean;
  labels?: Record<string, string>;
  gzip?: GzipOptions;
  onProgress?: (uncompressedBytes: number, total: number) => void;
  /** Called once the source is readable, before the layer (the caller may drop a temporary source then). */
  onPhase?: (phase: 'export' | 'layer') => void;
}

export interface NativeBuild {
  layer: LayerInfo & { path: string };
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

export async function buildNativeImage(input: NativeBuildInput): Promise<NativeBuild> {
  const source = await archiveSource(input.repo, input.commit, input.dir, input.onPhase);
  const plan = await planLayer(source, input.commit);
  input.onPhase?.('layer');
  const path = join(input.dir, 'layer.tar.gz');
  const layer = await writeLayerFile(streamLayer(source, plan), path, {
    gzip: input.gzip,
    total: plan.size,
    onProgress: input.onProgress,
  });
  const meta = { commit: input.commit, object: plan.commit, version: input.version, labels: input.labels };
  const configBytes = encodeJson(nativeImageConfig(meta, layer.diffId));
  // encapsulate.rs also sets the labels as the manifest's annotations; Docker schema 2 has no field for them.
  const annotations = input.oci ? nativeLabels(meta, layer.diffId) : undefined;
  const manifest = imageManifest(configBytes, layer, input.oci, annotations);
  return {
    layer: { ...layer, path },
    config: { bytes: configBytes, digest: digestOf(configBytes) },
    manifest,
  };
}
