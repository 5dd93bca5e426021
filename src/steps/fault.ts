/**
 * `- fault: { registry: down | up | corrupt-blob | slow | clear, rate, node }`: make the embedded registry misbehave.
 * `node` (corrupt-blob only) corrupts what that node's own port serves, not the other nodes'.
 */
import { DevpivotError } from '../core/errors.js';
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';
import { parseSize } from './units.js';

/** What a `fault` step does to the registry (the list is the type). */
export const REGISTRY_FAULTS = ['down', 'up', 'corrupt-blob', 'slow', 'clear'] as const;
export type RegistryFault = (typeof REGISTRY_FAULTS)[number];
/** The slowest `slow` rate: the registry sends slices of rate/20 bytes, at least one byte each. */
const MIN_RATE = 20;

export interface FaultStep extends StepBase {
  kind: 'fault';
  registry: RegistryFault;
  /** For `slow`. */
  bytesPerSecond?: number;
  /** For `corrupt-blob`: only this node's port serves corrupted layers. */
  node?: string;
}

/**
 * Label `fault registry down`, `fault registry slow 1MiB/s` with the rate as the scenario wrote it, or
 * `fault registry corrupt-blob for node1`.
 */
export function faultStep(
  registry: RegistryFault,
  pos: Position,
  rate?: { bytesPerSecond: number; text: string },
  node?: string,
): FaultStep {
  if (node !== undefined)
    return { kind: 'fault', registry, node, pos, label: `fault registry ${registry} for ${node}` };
  if (rate)
    return {
      kind: 'fault',
      registry,
      bytesPerSecond: rate.bytesPerSecond,
      pos,
      label: `fault registry ${registry} ${rate.text}/s`,
    };
  return { kind: 'fault', registry, pos, label: `fault registry ${registry}` };
}

export const fault: StepDefinition<FaultStep> = {
  schema: { keys: ['registry', 'rate', 'node'], required: ['registry'], nodes: 'any' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const f = read.fields(body, 'fault', fault.schema.keys, fault.schema.required);
    const registry = read.oneOf(f.get('registry')!.value, 'fault.registry', REGISTRY_FAULTS);
    if (read.registry === 'external')
      read.fail(
        f.get('registry')!.value,
        `'fault: { registry: ${registry} }' needs the embedded registry; this scenario uses an external one`,
        "remove 'registry:' from the scenario to use the embedded one",
      );
    if (f.has('node') && registry !== 'corrupt-blob')
      read.fail(f.get('node')!.key, "'node' only applies to 'registry: corrupt-blob'");
    if (registry === 'slow') {
      const raw = f.get('rate')?.value;
      const text = read.scalarText(raw)?.replace(/\/s$/, '') ?? '1MiB';
      const bytesPerSecond = parseSize(text, 1);
      if (bytesPerSecond === undefined || !Number.isFinite(bytesPerSecond) || bytesPerSecond < MIN_RATE)
        read.fail(raw ?? body, `fault.rate must be a size per second of at least ${MIN_RATE} bytes, like 1MiB/s`);
      return faultStep(registry, pos, { bytesPerSecond, text });
    }
    if (f.has('rate')) read.fail(f.get('rate')!.key, "'rate' only applies to 'registry: slow'");
    if (f.has('node')) return faultStep(registry, pos, undefined, read.node(f.get('node')!.value, body));
    return faultStep(registry, pos);
  },
  async run(step, runtime) {
    const registry = runtime.registry();
    if (!registry)
      throw new DevpivotError('FAULT_EXTERNAL_REGISTRY', 'registry faults need the embedded registry', {
        hint: "remove 'registry:' from the scenario to use the embedded one",
      });
    switch (step.registry) {
      case 'down':
        await registry.stop();
        return;
      case 'up':
        await registry.start();
        return;
      case 'corrupt-blob':
        if (step.node === undefined) registry.faults.corruptBlobs = true;
        else registry.faults.corruptBlobsFor = new Set([...(registry.faults.corruptBlobsFor ?? []), step.node]);
        return;
      case 'slow':
        registry.faults.slowBytesPerSecond = step.bytesPerSecond!;
        return;
      case 'clear':
        delete registry.faults.corruptBlobs;
        delete registry.faults.corruptBlobsFor;
        delete registry.faults.slowBytesPerSecond;
        return;
      default:
        // every fault has its case: a new one without it does not compile
        step.registry satisfies never;
    }
  },
};
