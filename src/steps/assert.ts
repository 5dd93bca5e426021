/** `- assert: { node, booted, reboots, failed }`: check what a node reported so far, at once (no waiting). */

import { describeIdentity, identityOf, isBootOf } from './boot-identity.js';
import type { StepBase, StepDefinition } from './definition.js';
import type { StepReader, StepSource } from './reader.js';
import { StepFailure } from './runtime.js';

export interface AssertStep extends StepBase {
  kind: 'assert';
  node: string;
  /** An oscontainer or image name: the commit the node's last boot must have. */
  booted?: string;
  /** Boots after the first one. */
  reboots?: number;
  failed?: boolean;
}

/** Label `assert node1 booted new reboots=1 failed=false` (the checks it has). */
export function assertStep(fields: Omit<AssertStep, 'kind' | 'label'>): AssertStep {
  const { node, booted, reboots, failed } = fields;
  const parts = [
    booted !== undefined ? `booted ${booted}` : '',
    reboots !== undefined ? `reboots=${reboots}` : '',
    failed !== undefined ? `failed=${failed}` : '',
  ].filter(Boolean);
  return { kind: 'assert', ...fields, label: `assert ${node} ${parts.join(' ')}` };
}

export const assert: StepDefinition<AssertStep> = {
  schema: { keys: ['node', 'booted', 'reboots', 'failed'], required: [], nodes: 'needs-running' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const f = read.fields(body, 'assert', assert.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    const booted = f.has('booted') ? read.bootTarget(f.get('booted')!.value) : undefined;
    const reboots = f.has('reboots') ? read.integer(f.get('reboots')!.value, 'assert.reboots', 0, 1000) : undefined;
    const failed = f.has('failed') ? read.boolean(f.get('failed')!.value, 'assert.failed') : undefined;
    if (booted === undefined && reboots === undefined && failed === undefined)
      read.fail(body, "assert needs 'booted', 'reboots' or 'failed'");
    return assertStep({
      node,
      ...(booted !== undefined ? { booted } : {}),
      ...(reboots !== undefined ? { reboots } : {}),
      ...(failed !== undefined ? { failed } : {}),
      pos,
    });
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    const boots = runtime.boots(step.node);
    const failures = runtime.failures(step.node);
    const problems: string[] = [];
    if (step.booted !== undefined) {
      const want = identityOf(runtime, step.booted);
      const last = boots.at(-1);
      if (!last) problems.push(`${step.node} has not reported a boot`);
      else if (want === undefined) problems.push(`the commit of '${step.booted}' is unknown (no node of it booted)`);
      else if (!isBootOf(want, last))
        problems.push(
          `${step.node} booted version ${last.version} (${'digest' in want ? last.image || 'no image digest' : last.commit.slice(0, 12)}), expected ${step.booted} (${describeIdentity(want)})`,
        );
    }
    const reboots = Math.max(0, boots.length - 1);
    if (step.reboots !== undefined && reboots !== step.reboots)
      problems.push(`${step.node} rebooted ${reboots} time(s), expected ${step.reboots}`);
    if (step.failed !== undefined && failures.length > 0 !== step.failed)
      problems.push(
        step.failed ? `${step.node} reported no failure` : `${step.node} reported a failure: ${failures[0]!.reason}`,
      );
    if (problems.length > 0) throw new StepFailure(problems.join('; '));
  },
};
