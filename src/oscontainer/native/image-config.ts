/**
 * The ostree-native image's labels and config, as bootc-dev/bootc `crates/ostree-ext/src/container/encapsulate.rs`
 * (534c76ea) writes them in `build_oci` and `export_chunked`:
 * - `ostree.commit`; `org.opencontainers.image.version` from the commit's `version` (the legacy `version` label is
 *   opt-in there and left out here);
 * - `ostree.bootable` and `containers.bootc=1` (`commit_meta_to_labels`), `ostree.linux` when the commit has it;
 * - `ostree.final-diffid`: the diff_id of the last ostree layer, which the importer needs to find the commit layer
 *   (`store.rs` `parse_manifest_layout`);
 * - `created` is the commit's timestamp, the layer's history entry is the commit subject (or "ostree export of
 *   commit …"), `Cmd` comes from the commit's `ostree.container-cmd`.
 *
 * One deviation: upstream labels an image bootable only when the commit's metadata has `ostree.bootable`; devpivot
 * builds OS images for pivots, so a commit without the key (the fixture's, made without `ostree commit
 * --bootable`) is labelled bootable too. A commit that says `ostree.bootable=false` keeps that.
 */
import type { VariantValue } from './gvariant.js';
import type { CommitObject } from './objects.js';

export const NativeLabel = {
  commit: 'ostree.commit',
  finalDiffId: 'ostree.final-diffid',
  bootable: 'ostree.bootable',
  bootc: 'containers.bootc',
  linux: 'ostree.linux',
  version: 'org.opencontainers.image.version',
} as const;

function stringOf(value: VariantValue | undefined): string | undefined {
  return value?.type === 's' ? (value.value as string) : undefined;
}

export interface NativeMeta {
  commit: string;
  object: CommitObject;
  /** The `version` label (the commit's, or an override). */
  version: string;
  /** Extra labels, merged last. */
  labels?: Record<string, string>;
}

export function nativeLabels(meta: NativeMeta, diffId: string): Record<string, string> {
  const { metadata } = meta.object;
  const bootable = metadata.get(NativeLabel.bootable);
  const labels: Record<string, string> = {
    [NativeLabel.bootable]: bootable?.type === 'b' ? String(bootable.value) : 'true',
    [NativeLabel.bootc]: '1',
    [NativeLabel.commit]: meta.commit,
    [NativeLabel.finalDiffId]: diffId,
    [NativeLabel.version]: meta.version,
  };
  const linux = stringOf(metadata.get(NativeLabel.linux));
  if (linux !== undefined) labels[NativeLabel.linux] = linux;
  Object.assign(labels, meta.labels);
  // Sorted keys: the config's bytes (and so the digest) do not depend on insertion order.
  return Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** `%Y-%m-%dT%H:%M:%SZ`, as encapsulate.rs formats the commit timestamp. */
export function commitCreated(object: CommitObject): string {
  return new Date(object.timestamp * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The commit layer's history entry: the commit subject, else "ostree export of commit …". */
export function commitDescription(meta: Pick<NativeMeta, 'commit' | 'object'>): string {
  return meta.object.subject || `ostree export of commit ${meta.commit}`;
}

/**
 * The config of an image whose layers are `layers`, in order: the commit layer (history `commitDescription`), then
 * any chunk layers (history: the chunk's name). `ostree.final-diffid` names the last one, which is the last layer
 * of the ostree commit (encapsulate.rs `export_chunked`).
 */
export function nativeImageConfig(
  meta: NativeMeta,
  layers: { diffId: string; createdBy: string }[],
): Record<string, unknown> {
  const created = commitCreated(meta.object);
  const cmd = meta.object.metadata.get('ostree.container-cmd');
  const config: Record<string, unknown> = { Labels: nativeLabels(meta, layers.at(-1)!.diffId) };
  if (cmd?.type === 'as') config.Cmd = cmd.value as string[];
  return {
    architecture: 'amd64',
    os: 'linux',
    created,
    config,
    rootfs: { type: 'layers', diff_ids: layers.map((layer) => layer.diffId) },
    history: layers.map((layer) => ({ created, created_by: layer.createdBy })),
  };
}
