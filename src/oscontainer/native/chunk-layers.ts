/**
 * The layers of a chunked native image, planned (encapsulate.rs `export_chunked`, bootc-dev/bootc 534c76ea): the
 * commit layer first (the commit, its metadata, the objects no bin took), then one layer per bin of
 * `basicPacking`, named as ostree-ext names it and annotated `ostree.components` with its packages' names.
 */
import { DevpivotError } from '../../core/errors.js';
import { mapComponents, readComponents } from './components.js';
import { type ContentEntry, chunkLayerPlan, commitLayerPlan, type LayerPlan } from './layer-plan.js';
import { basicPacking, binName } from './packing.js';

/** encapsulate.rs CONTENT_ANNOTATION and COMPONENT_SEPARATOR (container/mod.rs). */
export const CONTENT_ANNOTATION = 'ostree.components';
const COMPONENT_SEPARATOR = ',';

export interface ChunkOptions {
  bins: number;
  components: string | undefined;
  /** The commit layer's history entry. */
  description: string;
}

const byChecksum = (a: ContentEntry, b: ContentEntry) => (a.checksum < b.checksum ? -1 : 1);

export async function chunkLayers(
  plan: LayerPlan,
  options: ChunkOptions,
): Promise<{ plan: LayerPlan; createdBy: string; annotations?: Record<string, string> }[]> {
  if (!options.components)
    throw new DevpivotError('CHUNKING_NO_COMPONENTS', 'a chunked image needs to know the package of each file', {
      hint: 'chunk a fixture image (build: { fixture: N, format: native, layers: N }): its build lists the packages',
      exitCode: 2,
    });
  const mapping = mapComponents(plan.content, await readComponents(options.components));
  const bins = basicPacking(mapping.components, options.bins);
  const taken = new Set<string>();
  const chunks = bins.map((bin) => {
    const content = bin.flatMap((component) => mapping.objects.get(component.identifier) ?? []).sort(byChecksum);
    for (const entry of content) taken.add(entry.checksum);
    const packages = bin.map((component) => component.name).sort();
    return {
      plan: chunkLayerPlan(plan, content),
      createdBy: binName(bin),
      annotations: { [CONTENT_ANNOTATION]: packages.join(COMPONENT_SEPARATOR) },
    };
  });
  const remainder = plan.content.filter((entry) => !taken.has(entry.checksum));
  return [{ plan: commitLayerPlan(plan, remainder), createdBy: options.description }, ...chunks];
}
