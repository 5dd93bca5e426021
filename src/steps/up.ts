/** `- up` (every node) or `- up: [a, b]`: define and start nodes. */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';

export interface UpStep extends StepBase {
  kind: 'up';
  nodes: string[];
}

/** Label `up` when it starts as many nodes as the scenario has, else `up a, b`. */
export function upStep(nodes: string[], pos: Position, nodeCount: number): UpStep {
  return { kind: 'up', nodes, pos, label: nodes.length === nodeCount ? 'up' : `up ${nodes.join(', ')}` };
}

export const up: StepDefinition<UpStep> = {
  schema: { keys: [], required: [], nodes: 'starts' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const items = read.listItems(body);
    const nodes =
      body === null
        ? [...read.nodes]
        : read.stringList(body, 'up').map((_name, i) => read.node(items ? items[i]! : body, body));
    const twice = nodes.findIndex((name, i) => nodes.indexOf(name) !== i);
    if (twice >= 0) read.fail(items?.[twice] ?? body, `'up' names node '${nodes[twice]}' twice`);
    return upStep(nodes, pos, read.nodes.length);
  },
  nodesOf: (step) => step.nodes,
  async run(step, runtime) {
    for (const name of step.nodes) await runtime.up(name);
  },
};
