/**
 * `- pivot: { node, to, within }`: ask a running node to pivot to an oscontainer, as a second update request
 * does on a real node: over ssh, the node's own update unit is started with the new pullspec (for the legacy
 * driver: what the machine-config daemon's `RunPivot` did, see src/engine/ssh-pivot.ts), and the node reboots
 * when that staged a deployment. `to` defaults to the node's `pivot:` target; any oscontainer may be named
 * (`fixture:N` defines one), so one scenario can go v1 → v2 → v3. The step ends once the request was handed over;
 * `expect` what follows (`booted: …`, `event: pivot.skipped`).
 */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';
import { formatDuration } from './units.js';

export interface PivotStep extends StepBase {
  kind: 'pivot';
  node: string;
  /** An oscontainer name. */
  to: string;
  /** How long the request may take: ssh reaching the node and its update unit finishing (pull, stage). */
  withinMs: number;
}

/** The default `within`: a pull and a stage under TCG. */
export const PIVOT_WITHIN_MS = 10 * 60_000;

/** Label `pivot node1 to new` (`… within 20m` when not the default). */
export function pivotStep(node: string, to: string, pos: Position, withinMs = PIVOT_WITHIN_MS): PivotStep {
  const within = withinMs === PIVOT_WITHIN_MS ? '' : ` within ${formatDuration(withinMs)}`;
  return { kind: 'pivot', node, to, withinMs, pos, label: `pivot ${node} to ${to}${within}` };
}

export const pivot: StepDefinition<PivotStep> = {
  needsSsh: true,
  schema: { keys: ['node', 'to', 'within'], required: [], nodes: 'needs-running' },
  parse({ body, key, pos }: StepSource, read: StepReader) {
    const f = read.isScalar(body)
      ? new Map([['node', { key: body, value: body }]])
      : read.fields(body, 'pivot', pivot.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    const to = f.has('to') ? read.oscontainer(f.get('to')!.value, 'pivot.to') : read.pivotTarget(node);
    if (!to) read.fail(body ?? key, `node '${node}' has no pivot target`, "name one: 'pivot: { node, to: NAME }'");
    const withinMs = f.has('within') ? read.duration(f.get('within')!.value, 'pivot.within') : PIVOT_WITHIN_MS;
    return pivotStep(node, to, pos, withinMs);
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    await runtime.requestPivot(step.node, step.to, step.withinMs);
  },
};
