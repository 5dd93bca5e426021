/** The two oscontainer formats (docs/PROTOCOLS.md): defined once, for the builder, the scenario and the drivers. */

/** `legacy`: the `/srv/repo` oscontainer (pivot, MCO ≤ 4.13); `native`: ostree-ext's bootable format. */
export type OscontainerFormat = 'legacy' | 'native';
export const OSCONTAINER_FORMATS: readonly OscontainerFormat[] = ['legacy', 'native'];

/** A built layer's compression: `gzip`, or `zstd` (native only: docs/PROTOCOLS.md "Layer compression"). */
export type LayerCompression = 'gzip' | 'zstd';
export const LAYER_COMPRESSIONS: readonly LayerCompression[] = ['gzip', 'zstd'];
