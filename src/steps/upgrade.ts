/**
 * `- upgrade: { node, within }`: move a running node to what the tag it follows (`follow:`) names now, with its
 * driver's upgrade (src/drivers/): `bootc upgrade` and `rpm-ostree upgrade` resolve the tag themselves; legacy and
 * mcd take digests only, so devpivot asks for the tag's digest as a new osImageURL. Run as root over ssh; the node
 * reboots when a deployment was staged. A tag that did not move stages nothing ("No update available.",
 * "No upgrade available.": a `pivot.skipped`). With `download-only: true` the tool stages the new image
 * finalization-locked and nothing reboots: a reboot boots the old deployment, and `finalize` applies the staged one
 * (src/drivers/staged-later.ts; bootc and rpm-ostree only). `expect` what follows.
 */
import type { StepBase, StepDefinition } from './definition.js';
import type { Position, StepReader, StepSource } from './reader.js';
import { formatDuration } from './units.js';

export interface UpgradeStep extends StepBase {
  kind: 'upgrade';
  node: string;
  /** How long the request may take: ssh, the manifest fetch and, when the tag moved, the pull and the stage. */
  withinMs: number;
  /** Stage without applying at shutdown (`bootc upgrade --download-only`, `rpm-ostree upgrade --lock-finalization`). */
  downloadOnly: boolean;
}

/** The default `within`: a pull and a stage under TCG, as a `pivot` step. */
export const UPGRADE_WITHIN_MS = 10 * 60_000;

/** Label `upgrade node1` (`… download only`, `… within 20m` when not the default). */
export function upgradeStep(
  node: string,
  pos: Position,
  withinMs = UPGRADE_WITHIN_MS,
  downloadOnly = false,
): UpgradeStep {
  const within = withinMs === UPGRADE_WITHIN_MS ? '' : ` within ${formatDuration(withinMs)}`;
  const only = downloadOnly ? ' download only' : '';
  return { kind: 'upgrade', node, withinMs, downloadOnly, pos, label: `upgrade ${node}${only}${within}` };
}

export const upgrade: StepDefinition<UpgradeStep> = {
  needsSsh: true,
  schema: { keys: ['node', 'within', 'download-only'], required: [], nodes: 'needs-running' },
  parse({ body, key, pos }: StepSource, read: StepReader) {
    const f = read.isScalar(body)
      ? new Map([['node', { key: body, value: body }]])
      : read.fields(body, 'upgrade', upgrade.schema.keys);
    const node = read.node(f.get('node')?.value, body);
    if (!read.follows(node))
      read.fail(body ?? key, `node '${node}' follows no tag`, "give it 'follow: REPO:TAG' (and a pivot target)");
    const withinMs = f.has('within') ? read.duration(f.get('within')!.value, 'upgrade.within') : UPGRADE_WITHIN_MS;
    const only = f.get('download-only');
    const downloadOnly = only ? read.boolean(only.value, 'upgrade.download-only') : false;
    const refused = downloadOnly ? read.cannotStageLater(node) : undefined;
    if (refused) read.fail(only!.value, refused, "drop 'download-only', or give the node driver bootc or rpm-ostree");
    return upgradeStep(node, pos, withinMs, downloadOnly);
  },
  nodesOf: (step) => [step.node],
  async run(step, runtime) {
    await runtime.requestUpgrade(step.node, step.withinMs, { downloadOnly: step.downloadOnly });
  },
};
