/** `- wait: 30s`: let time pass (a node failing meanwhile fails the step at once). */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';
import { formatDuration } from './units.js';

export interface WaitStep extends StepBase {
  kind: 'wait';
  ms: number;
}

/** Label `wait 30s`. */
export function waitStep(ms: number, pos: Position): WaitStep {
  return { kind: 'wait', ms, pos, label: `wait ${formatDuration(ms)}` };
}

export const wait: StepDefinition<WaitStep> = {
  schema: { keys: [], required: [], nodes: 'any' },
  parse({ body, pos }: StepSource, read: StepReader) {
    return waitStep(read.duration(body, 'wait'), pos);
  },
  minimumMs: (step) => step.ms,
  async run(step, runtime) {
    await runtime.pause(step.ms);
  },
};
