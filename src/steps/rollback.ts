/**
 * `- rollback: { node, within }`: make a running node boot its previous deployment with its driver's own tool, as
 * a node is rolled back by hand: `rpm-ostree rollback --reboot` (legacy, mcd, rpm-ostree) or `bootc rollback
 * --apply` (src/drivers/rollback.ts), run as root over ssh. The tool reorders the existing deployments (no pull)
 * and reboots; the step ends once it wrote the new order. `expect: { booted: … }` what follows.
 */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';
import { formatDuration } from './units.js';

export interface RollbackStep extends StepBase {
  kind: 'rollback';
  node: string;
  /** How long the request may take: ssh reaching the node and the tool writing the new order. */
  withinMs: number;
}

/** The default `within`: ssh and a rewrite of the boot loader entries under TCG. */
export const ROLLBACK_WITHIN_MS = 3 * 60_000;

/** Label `rollback node1` (`… within 5m` when not the default). */
export function rollbackStep(node: string, pos: Position, withinMs = ROLLBACK_WITHIN_MS): RollbackStep {
  const within = withinMs === ROLLBACK_WITHIN_MS ? '' : ` within ${formatDuration(withinMs)}`;
  return { kind: 'rollback', node, withinMs, pos, label: `rollback ${node}${within}` };
}

export const rollback: StepDefinition<RollbackStep> = {
  needsSsh: true,
  schema: { keys: ['node', 'within'], required: [], nodes: 'needs-running' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const f = read.isScalar(body)
      ? new Map([['node', { key: body, value: body }]])
      : read.fields(body, 'rollback', rollback.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    const withinMs = f.has('within') ? read.duration(f.get('within')!.value, 'rollback.within') : ROLLBACK_WITHIN_MS;
    return rollbackStep(node, pos, withinMs);
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    await runtime.requestRollback(step.node, step.withinMs);
  },
};
