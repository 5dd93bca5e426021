/**
 * `- power-off: { node, when, after, within, restart }`: pull the plug on a node, optionally once its pivot reached
 * a phase (`when: staging`) and some time after that; by default it is powered on again (`restart: true`).
 */
import { PIVOT_PHASES, type PivotPhase } from '../core/events.js';
import { DEFAULT_WITHIN_MS, type StepBase, type StepDefinition } from './definition.js';
import type { Field, StepReader, StepSource } from './reader.js';
import { formatDuration } from './units.js';

export interface PowerOffStep extends StepBase {
  kind: 'power-off';
  node: string;
  /** Wait for this pivot phase first; undefined: at once. */
  when?: PivotPhase;
  afterMs: number;
  /** How long to wait for `when`. */
  withinMs: number;
  restart: boolean;
}

/** Label `power-off node1 when staging +2s, power on`. */
export function powerOffStep(fields: Omit<PowerOffStep, 'kind' | 'label'>): PowerOffStep {
  const { node, when, afterMs, restart } = fields;
  const label = `power-off ${node}${when ? ` when ${when}` : ''}${afterMs ? ` +${formatDuration(afterMs)}` : ''}${restart ? ', power on' : ''}`;
  return { kind: 'power-off', ...fields, label };
}

export const powerOff: StepDefinition<PowerOffStep> = {
  schema: { keys: ['node', 'when', 'after', 'within', 'restart'], required: [], nodes: 'needs-running' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const f: ReadonlyMap<string, Field> = read.isScalar(body)
      ? new Map([['node', { key: body, value: body }]])
      : body === null
        ? new Map()
        : read.fields(body, 'power-off', powerOff.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    const whenValue = f.get('when')?.value;
    let when: PivotPhase | undefined;
    if (whenValue) {
      const text = read.string(whenValue, 'power-off.when').replace(/^pivot\./, '');
      if (text !== 'now') when = read.oneOf(read.rewritten(text, whenValue), 'power-off.when', PIVOT_PHASES);
    }
    const afterMs = f.has('after') ? read.duration(f.get('after')!.value, 'power-off.after', { min: 0 }) : 0;
    const withinMs = f.has('within') ? read.duration(f.get('within')!.value, 'power-off.within') : DEFAULT_WITHIN_MS;
    const restart = f.has('restart') ? read.boolean(f.get('restart')!.value, 'power-off.restart') : true;
    return powerOffStep({ node, ...(when ? { when } : {}), afterMs, withinMs, restart, pos });
  },
  nodesOf: (step) => [step.node],
  minimumMs: (step) => step.afterMs,
  async run(step, runtime) {
    const phase = step.when;
    if (phase)
      await runtime.waitFor(
        step.node,
        (event) => event.kind === 'guest.pivot' && event.phase === phase,
        step.withinMs,
        `${step.node} pivot phase ${phase}`,
      );
    if (step.afterMs > 0) await runtime.pause(step.afterMs);
    await runtime.powerCycle(step.node, step.restart);
  },
};
