import type { DevpivotEvent, EventOf, PivotPhase } from '../core/events.js';

/**
 * The console classifier: turns a node's console lines and libvirt lifecycle events into `guest.*` events.
 * Pure: `classify(state, input)` returns the events and the next state; the engine keeps one state per node.
 *
 * Two sources, the same meaning:
 * - the machine-readable report line `devpivot-report: {json}` (the fixture prints it natively; devpivot's
 *   Ignition installs a unit that prints it on RHCOS/FCOS), and
 * - the generic markers of RHCOS/FCOS (pivot, rpm-ostree, bootc, Ignition, kernel, systemd) that kola also uses.
 * A guest may print both for one fact: each fact is reported once per boot (the state resets on a new boot).
 */
export type GuestEvent = Extract<DevpivotEvent, { kind: `guest.${string}` }>;

export interface ClassifierState {
  /** Facts already reported during this boot: 'ignition', 'pivot:staged', 'skipped', 'booted', 'failure:...'. */
  readonly seen: ReadonlySet<string>;
  /** The pivot target last named by the guest in this boot (generic markers do not carry the pullspec). */
  readonly target: string | undefined;
}

export const initialState: ClassifierState = { seen: new Set(), target: undefined };

export type ClassifierInput =
  | EventOf<'vm.console'>
  | EventOf<'vm.started'>
  | EventOf<'vm.reboot'>
  | EventOf<'vm.crashed'>
  | EventOf<'vm.stopped'>;

export interface Classified {
  state: ClassifierState;
  events: GuestEvent[];
}

const REPORT_PREFIX = 'devpivot-report: ';

/**
 * Console noise before the text: kernel timestamps, systemd status tags, ANSI colours, carriage returns. (Not
 * `vm/console-lines.ts` `cleanLine`, which only removes terminal escapes and control characters.)
 */
export function stripConsoleNoise(line: string): string {
  return line
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
    .replace(/\r/g, '')
    .replace(/^\s*\[\s*\d+\.\d+\]\s?/, '')
    .replace(/^\s*\[\s*(OK|FAILED|DEPEND|TIME|\*+)\s*\]\s?/, '')
    .trim();
}

/** Failure markers (kola's list): any of them means the node is broken, so the engine fails at once. */
const FAILURE_MARKERS: [RegExp, string][] = [
  [/Kernel panic - not syncing:/, 'kernel panic'],
  [/\bOops: [0-9a-f]{4}\b|\bOops:\s/, 'kernel oops'],
  [/dracut: Refusing to continue/, 'dracut refused to continue'],
  [/You are in emergency mode/, 'emergency mode'],
  [/invoked oom-killer/, 'out of memory'],
  [/Ignition has failed/, 'Ignition failed'],
  // glog's fatal lines (openshift/pivot utils/run.go, cmd/root.go): "F1201 12:00:00.000000    1234 run.go:48] …"
  [/\bF\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\s+\d+ [\w.-]+:\d+\] /, 'fatal error'],
];

type Marker = { pattern: RegExp; fact: (match: RegExpExecArray, target: string | undefined) => Fact };
type Fact =
  | { kind: 'ignition'; ok: boolean }
  | { kind: 'pivot'; phase: PivotPhase; target: string }
  | { kind: 'skipped'; target: string; reason: string };

/** Progress markers of the real update tools (pivot, rpm-ostree, bootc, Ignition). */
const MARKERS: Marker[] = [
  { pattern: /Ignition finished successfully/, fact: () => ({ kind: 'ignition', ok: true }) },
  // systemd's status line in the RHCOS/FCOS initramfs (252: "unit - Description", older: the description)
  {
    pattern: /Reached target (?:ignition-complete\.target|Ignition Complete)\b/,
    fact: () => ({ kind: 'ignition', ok: true }),
  },
  // openshift/pivot utils/run.go logs each command: "Running: podman pull -q [--authfile F] IMAGE"
  {
    pattern: /Running: podman pull -q (?:--authfile \S+ )?(\S+)/,
    fact: (m, target) => ({ kind: 'pivot', phase: 'pulling', target: target ?? m[1]! }),
  },
  { pattern: /Ignition has failed/, fact: () => ({ kind: 'ignition', ok: false }) },
  // openshift/pivot: "Pivoting to: 42.80.1 (abc...)"; then rpm-ostree stages it
  {
    pattern: /Pivoting to: (\S+) \(([0-9a-f]{64})\)/,
    fact: (m, target) => ({ kind: 'pivot', phase: 'staging', target: target ?? `${m[1]} (${m[2]})` }),
  },
  {
    pattern: /Already at target pivot; exiting/,
    fact: (_m, target) => ({ kind: 'skipped', target: target ?? '', reason: 'already at target' }),
  },
  // rpm-ostree rebase ostree-unverified-registry:IMAGE / ostree-image-signed:...
  {
    pattern: /Pulling manifest: (?:ostree-[a-z-]+:)?(?:docker:\/\/)?(\S+)/,
    fact: (m, target) => ({ kind: 'pivot', phase: 'pulling', target: target ?? m[1]! }),
  },
  // bootc switch
  {
    pattern: /Fetching (?:ostree-[a-z-]+:)?(?:docker:\/\/)?(\S+)/,
    fact: (m, target) => ({ kind: 'pivot', phase: 'pulling', target: target ?? m[1]! }),
  },
  {
    pattern: /Staging deployment\.\.\.(?!done)/,
    fact: (_m, target) => ({ kind: 'pivot', phase: 'staging', target: target ?? '' }),
  },
  {
    pattern: /Staging deployment\.\.\.done|Queued for next boot/,
    fact: (_m, target) => ({ kind: 'pivot', phase: 'staged', target: target ?? '' }),
  },
];

/** A reboot the pivot asked for, once it staged something ("reboot: Restarting system" is the kernel's). */
const REBOOT_MARKER = /reboot: Restarting system|Reached target (?:System )?Reboot/;

export function classify(state: ClassifierState, input: ClassifierInput): Classified {
  const node = input.node;
  switch (input.kind) {
    case 'vm.started':
    case 'vm.reboot':
      // A new boot: every fact may be reported again. The pivot target stays (the pullspec outlives a boot).
      return { state: { seen: new Set(), target: state.target }, events: [] };
    case 'vm.crashed':
      return once(state, `failure:crashed`, [
        { kind: 'guest.failure', node, reason: `the VM crashed: ${input.reason}`, line: '' },
      ]);
    case 'vm.stopped':
      return { state, events: [] };
    case 'vm.console':
      return classifyLine(state, node, input.line);
  }
}

function classifyLine(state: ClassifierState, node: string, raw: string): Classified {
  const line = stripConsoleNoise(raw);
  if (line === '') return { state, events: [] };
  const at = line.indexOf(REPORT_PREFIX);
  if (at >= 0) return classifyReport(state, node, line.slice(at + REPORT_PREFIX.length), line);
  for (const [pattern, reason] of FAILURE_MARKERS) {
    if (!pattern.test(line)) continue;
    let next = state;
    const events: GuestEvent[] = [];
    if (reason === 'Ignition failed') {
      const ignition = once(next, 'ignition', [{ kind: 'guest.ignition', node, ok: false }]);
      next = ignition.state;
      events.push(...ignition.events);
    }
    const failure = once(next, `failure:${reason}`, [
      { kind: 'guest.failure', node, reason: `${reason}: ${line}`, line },
    ]);
    return { state: failure.state, events: [...events, ...failure.events] };
  }
  for (const marker of MARKERS) {
    const match = marker.pattern.exec(line);
    if (match) return fromFact(state, node, marker.fact(match, state.target));
  }
  if (REBOOT_MARKER.test(line) && state.seen.has('pivot:staged')) {
    return fromFact(state, node, { kind: 'pivot', phase: 'rebooting', target: state.target ?? '' });
  }
  return { state, events: [] };
}

function classifyReport(state: ClassifierState, node: string, json: string, line: string): Classified {
  let report: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(json);
    if (typeof parsed !== 'object' || parsed === null) return { state, events: [] };
    report = parsed as Record<string, unknown>;
  } catch {
    // A line cut by the serial port (or interleaved with kernel output) is not a report.
    return { state, events: [] };
  }
  const str = (key: string) => (typeof report[key] === 'string' ? (report[key] as string) : '');
  switch (report.event) {
    case 'booted':
      return once(state, 'booted', [
        { kind: 'guest.booted', node, bootId: str('bootId'), version: str('version'), commit: str('commit') },
      ]);
    case 'ignition':
      return fromFact(state, node, { kind: 'ignition', ok: report.ok === true });
    case 'pivot': {
      const phase = str('phase') as PivotPhase;
      if (!['pulling', 'staging', 'staged', 'rebooting'].includes(phase)) return { state, events: [] };
      return fromFact({ ...state, target: str('target') || state.target }, node, {
        kind: 'pivot',
        phase,
        target: str('target') || (state.target ?? ''),
      });
    }
    case 'pivot-skipped':
      return fromFact(state, node, { kind: 'skipped', target: str('target'), reason: str('reason') });
    case 'failed':
      return once(state, `failure:report:${str('reason')}`, [
        { kind: 'guest.failure', node, reason: str('reason') || 'the guest reported a failure', line },
      ]);
    default:
      return { state, events: [] };
  }
}

function fromFact(state: ClassifierState, node: string, fact: Fact): Classified {
  switch (fact.kind) {
    case 'ignition':
      return once(state, 'ignition', [{ kind: 'guest.ignition', node, ok: fact.ok }]);
    case 'pivot': {
      const target = fact.target || state.target || '';
      const next = { ...state, target: target || state.target };
      return once(next, `pivot:${fact.phase}`, [{ kind: 'guest.pivot', node, phase: fact.phase, target }]);
    }
    case 'skipped':
      return once(state, 'skipped', [
        { kind: 'guest.pivot.skipped', node, target: fact.target || state.target || '', reason: fact.reason },
      ]);
  }
}

function once(state: ClassifierState, key: string, events: GuestEvent[]): Classified {
  if (state.seen.has(key)) return { state, events: [] };
  return { state: { ...state, seen: new Set([...state.seen, key]) }, events };
}
