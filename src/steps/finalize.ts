/**
 * `- finalize: { node, within }`: apply the deployment an `upgrade: { download-only: true }` staged on a running
 * node, with its driver's tool (src/drivers/staged-later.ts): `bootc upgrade --from-downloaded --apply` or
 * `rpm-ostree finalize-deployment DIGEST` (DIGEST: the image the followed tag names now, which rpm-ostree checks
 * against the staged one). Run as root over ssh; the tool unlocks the staged deployment and reboots into it.
 * `expect: { booted: … }` what follows.
 */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';
import { formatDuration } from './units.js';

export interface FinalizeStep extends StepBase {
  kind: 'finalize';
  node: string;
  /** How long the request may take: ssh reaching the node and the tool unlocking the staged deployment. */
  withinMs: number;
}

/** The default `within`: ssh and a status read under TCG. */
export const FINALIZE_WITHIN_MS = 3 * 60_000;

/** Label `finalize node1` (`… within 5m` when not the default). */
export function finalizeStep(node: string, pos: Position, withinMs = FINALIZE_WITHIN_MS): FinalizeStep {
  const within = withinMs === FINALIZE_WITHIN_MS ? '' : ` within ${formatDuration(withinMs)}`;
  return { kind: 'finalize', node, withinMs, pos, label: `finalize ${node}${within}` };
}

export const finalize: StepDefinition<FinalizeStep> = {
  needsSsh: true,
  schema: { keys: ['node', 'within'], required: [], nodes: 'needs-running' },
  parse({ body, key, pos }: StepSource, read: StepReader) {
    const f = read.isScalar(body)
      ? new Map([['node', { key: body, value: body }]])
      : read.fields(body, 'finalize', finalize.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    const refused = read.cannotStageLater(node);
    if (refused) read.fail(body ?? key, refused, 'give the node driver bootc or rpm-ostree');
    if (!read.follows(node))
      read.fail(body ?? key, `node '${node}' follows no tag`, "give it 'follow: REPO:TAG' (and a pivot target)");
    const withinMs = f.has('within') ? read.duration(f.get('within')!.value, 'finalize.within') : FINALIZE_WITHIN_MS;
    return finalizeStep(node, pos, withinMs);
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    await runtime.requestFinalize(step.node, step.withinMs);
  },
};
