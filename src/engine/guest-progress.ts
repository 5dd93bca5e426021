import type { EventOf } from '../core/events.js';

/**
 * The guest's own progress lines, as `guest.progress` events:
 * - `devpivot-progress: {json}`: a line of bootc's `--progress-fd` (bootc-dev/bootc 534c76ea
 *   crates/lib/src/progress_jsonl.rs, protocol 0.1.0: `ProgressBytes`, `ProgressSteps`; `Start` carries nothing),
 *   relayed to the console by the bootc driver's unit (drivers/bootc.ts);
 * - rpm-ostree's `[n/m] Fetching ostree chunk DIGEST (SIZE)...done`, one per layer imported (coreos/rpm-ostree
 *   d5ef5f0c rust/src/sysroot_upgrade.rs layer_progress_print).
 * A line cut or interleaved on the serial console does not parse and is no event.
 */
export const PROGRESS_PREFIX = 'devpivot-progress: ';

const RPM_OSTREE_LAYER = /\[(\d+)\/(\d+)\] Fetching (ostree chunk|layer) ([0-9a-f]{19}) \(([^)]+)\)\.\.\.done$/;

type Progress = EventOf<'guest.progress'>;

export function guestProgress(node: string, line: string): Progress | undefined {
  const at = line.indexOf(PROGRESS_PREFIX);
  if (at >= 0) return bootcProgress(node, line.slice(at + PROGRESS_PREFIX.length));
  const layer = RPM_OSTREE_LAYER.exec(line);
  if (!layer) return undefined;
  return {
    kind: 'guest.progress',
    node,
    tool: 'rpm-ostree',
    task: 'pulling',
    steps: Number(layer[1]),
    stepsTotal: Number(layer[2]),
    subtask: `${layer[3]} ${layer[4]} (${layer[5]})`,
  };
}

function bootcProgress(node: string, json: string): Progress | undefined {
  let event: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(json);
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    event = parsed as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (event.type !== 'ProgressBytes' && event.type !== 'ProgressSteps') return undefined;
  const num = (key: string) => (typeof event[key] === 'number' ? (event[key] as number) : 0);
  if (typeof event.task !== 'string') return undefined;
  const subtasks = Array.isArray(event.subtasks) ? (event.subtasks as Record<string, unknown>[]) : [];
  const last = subtasks.at(-1);
  return {
    kind: 'guest.progress',
    node,
    tool: 'bootc',
    task: event.task,
    steps: num('steps'),
    stepsTotal: num('stepsTotal'),
    ...(event.type === 'ProgressBytes' ? { bytes: num('bytes'), bytesTotal: num('bytesTotal') } : {}),
    ...(subtasks.some((sub) => typeof sub.bytes === 'number' && sub.bytes < Number(sub.bytesTotal))
      ? { partial: true as const }
      : {}),
    ...(last && typeof last.description === 'string' ? { subtask: last.description } : {}),
  };
}
