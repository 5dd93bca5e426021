/**
 * `- pivot: { node, to }`: make a running node pivot again. devpivot has no agent in the guest: a hard reset
 * makes the guest's pivot agent run again at boot while the pullspec its Ignition wrote is still there, so `to`
 * can only be the node's own `pivot:` target.
 */
import type { StepBase, StepDefinition } from './definition.js';
import type { Field, Position, StepReader, StepSource } from './reader.js';

export interface PivotStep extends StepBase {
  kind: 'pivot';
  node: string;
  /** An oscontainer name: the node's `pivot:` target. */
  to: string;
}

/** Label `pivot node1 to new`. */
export function pivotStep(node: string, to: string, pos: Position): PivotStep {
  return { kind: 'pivot', node, to, pos, label: `pivot ${node} to ${to}` };
}

export const pivot: StepDefinition<PivotStep> = {
  schema: { keys: ['node', 'to'], required: [], nodes: 'needs-running' },
  parse({ body, key, pos }: StepSource, read: StepReader) {
    const f: ReadonlyMap<string, Field> = read.isScalar(body)
      ? new Map([['node', { key: body, value: body }]])
      : read.fields(body, 'pivot', pivot.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    const target = read.pivotTarget(node);
    const toValue = f.get('to')?.value ?? null;
    const to = f.has('to') ? read.string(toValue, 'pivot.to') : target;
    if (!to) read.fail(body ?? key, `node '${node}' has no pivot target`, "set 'pivot:' on the node");
    if (to !== target)
      read.fail(
        toValue ?? key,
        `pivot.to '${to}' differs from node '${node}' pivot target '${target ?? '(none)'}'`,
        'a running node re-runs the pivot its Ignition configured; devpivot has no agent in the guest',
      );
    return pivotStep(node, to, pos);
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    await runtime.powerCycle(step.node, true);
  },
};
