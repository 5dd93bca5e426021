/**
 * `- assert: { node, booted, reboots, failed, fetched, layers }`: check what a node reported so far, at once (no
 * waiting). `fetched: NAME` with `layers: N`: of oscontainer NAME's layers (devpivot built it), the node fetched
 * exactly N from the embedded registry since its last `up`, pivot or upgrade request (its requests on its own
 * port, whole blob GETs): what a chunked update must show.
 */

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
  /** With `layers`: the image whose layers are counted. */
  fetched?: string;
  layers?: number;
}

/** Label `assert node1 booted new reboots=1 failed=false` (the checks it has). */
export function assertStep(fields: Omit<AssertStep, 'kind' | 'label'>): AssertStep {
  const { node, booted, reboots, failed, fetched, layers } = fields;
  const parts = [
    booted !== undefined ? `booted ${booted}` : '',
    reboots !== undefined ? `reboots=${reboots}` : '',
    failed !== undefined ? `failed=${failed}` : '',
    fetched !== undefined ? `fetched ${layers} layer(s) of ${fetched}` : '',
  ].filter(Boolean);
  return { kind: 'assert', ...fields, label: `assert ${node} ${parts.join(' ')}` };
}

export const assert: StepDefinition<AssertStep> = {
  schema: { keys: ['node', 'booted', 'reboots', 'failed', 'fetched', 'layers'], required: [], nodes: 'needs-running' },
  parse({ body, pos }: StepSource, read: StepReader) {
    const f = read.fields(body, 'assert', assert.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    const booted = f.has('booted') ? read.bootTarget(f.get('booted')!.value) : undefined;
    const reboots = f.has('reboots') ? read.integer(f.get('reboots')!.value, 'assert.reboots', 0, 1000) : undefined;
    const failed = f.has('failed') ? read.boolean(f.get('failed')!.value, 'assert.failed') : undefined;
    if (f.has('fetched') !== f.has('layers'))
      read.fail(
        f.get('fetched')?.key ?? f.get('layers')!.key,
        "assert: 'fetched' and 'layers' go together",
        'write fetched: IMAGE, layers: N (the layers of IMAGE the node fetched)',
      );
    const fetched = f.has('fetched') ? read.bootTarget(f.get('fetched')!.value) : undefined;
    const layers = f.has('layers') ? read.integer(f.get('layers')!.value, 'assert.layers', 0, 1000) : undefined;
    if (booted === undefined && reboots === undefined && failed === undefined && fetched === undefined)
      read.fail(body, "assert needs 'booted', 'reboots', 'failed' or 'fetched'");
    return assertStep({
      node,
      ...(booted !== undefined ? { booted } : {}),
      ...(reboots !== undefined ? { reboots } : {}),
      ...(failed !== undefined ? { failed } : {}),
      ...(fetched !== undefined ? { fetched, layers: layers! } : {}),
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
    if (step.fetched !== undefined) {
      const layers = runtime.layersOf(step.fetched);
      if (!layers) problems.push(`the layers of '${step.fetched}' are unknown (devpivot did not build it)`);
      else {
        const fetched = new Set(runtime.fetched(step.node));
        const got = layers.filter((digest) => fetched.has(digest));
        if (got.length !== step.layers)
          problems.push(
            `${step.node} fetched ${got.length} of ${step.fetched}'s ${layers.length} layers, expected ${step.layers}` +
              (got.length > 0 ? ` (${got.map((d) => d.slice(7, 19)).join(', ')})` : ''),
          );
      }
    }
    if (problems.length > 0) throw new StepFailure(problems.join('; '));
  },
};
