/** What a scenario gets when it leaves something out. */
import { assertStep } from '../steps/assert.js';
import { expectStep } from '../steps/expect.js';
import { DEFAULT_WITHIN_MS, type Step } from '../steps/index.js';
import { upStep } from '../steps/up.js';
import type { NodeDef } from './types.js';

export const NODE_DEFAULTS = { memoryMiB: 1024, vcpus: 1, firmware: 'bios' as const, driver: 'legacy' as const };

/** Deadline of the whole run without `timeout:`. */
export const DEFAULT_TIMEOUT_MS = 30 * 60_000;

/** Steps when the file has none: boot everything, and for every node with a target, see it boot the target. */
export function defaultSteps(nodes: NodeDef[]): Step[] {
  const pos = { line: 1, col: 1 };
  const steps: Step[] = [
    upStep(
      nodes.map((n) => n.name),
      pos,
      nodes.length,
    ),
  ];
  for (const node of nodes) {
    if (!node.pivot) {
      steps.push(expectStep({ node: node.name, event: 'booted', withinMs: DEFAULT_WITHIN_MS, pos }));
      continue;
    }
    steps.push(
      expectStep({ node: node.name, event: 'booted', booted: node.pivot, withinMs: 2 * DEFAULT_WITHIN_MS, pos }),
    );
    steps.push(assertStep({ node: node.name, booted: node.pivot, pos }));
  }
  return steps;
}
