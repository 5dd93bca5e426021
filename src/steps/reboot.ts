/** `- reboot: node1`: a hard reset of a running node (power off, power on). */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';

export interface RebootStep extends StepBase {
  kind: 'reboot';
  node: string;
}

/** Label `reboot node1`. */
export function rebootStep(node: string, pos: Position): RebootStep {
  return { kind: 'reboot', node, pos, label: `reboot ${node}` };
}

export const reboot: StepDefinition<RebootStep> = {
  schema: { keys: ['node'], required: [], nodes: 'needs-running' },
  parse({ body, key, pos }: StepSource, read: StepReader) {
    const node = read.isScalar(body)
      ? read.node(body, body)
      : body === null
        ? read.node(null, key)
        : read.node(read.fields(body, 'reboot', reboot.schema.keys).get('node')?.value, body);
    return rebootStep(node, pos);
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    await runtime.powerCycle(step.node, true);
  },
};
