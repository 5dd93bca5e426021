/** `- down`: remove every node of the run (cleanup does it anyway at the end). */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';

export interface DownStep extends StepBase {
  kind: 'down';
}

export function downStep(pos: Position): DownStep {
  return { kind: 'down', pos, label: 'down' };
}

export const down: StepDefinition<DownStep> = {
  schema: { keys: [], required: [], nodes: 'removes' },
  parse({ body, pos }: StepSource, read: StepReader) {
    if (body !== null) read.fail(body, "'down' takes no arguments");
    return downStep(pos);
  },
  async run(_step, runtime) {
    await runtime.down();
  },
};
