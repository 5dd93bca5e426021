import type { DevpivotEvent, EventOf, PivotPhase } from '../core/events.js';
import { stripConsoleNoise } from './console-noise.js';
import { type GreenbootSection, greenbootFact } from './greenboot.js';
import { guestProgress } from './guest-progress.js';
import { pullCause, pullCauseReason } from './pull-cause.js';
import { refusedRequest } from './refused-request.js';
import { secureBootRefusal } from './secure-boot.js';

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
  /** Bonding "link status up" lines seen in this boot (kola's multi-line check). */
  readonly bondingLines?: number;
  /** The last error a tool printed in this boot that was not itself a failure (a pull that is retried). */
  readonly lastError?: string;
  /** The section of greenboot's checks running in this boot (its failures count in required.d only). */
  readonly greenboot?: GreenbootSection;
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
 * Failure markers: any of them means the node is broken, so the engine fails at once. First kola's console checks,
 * exactly (coreos/coreos-assembler `mantle/kola/harness.go` `consoleChecks` at 05db482e; their `desc` is the
 * reason; docs/PROTOCOLS.md "## Console"). kola runs each regex over the whole console: here each line, and the one
 * multi-line check (bonding link messages, ten of them) is counted per boot (BONDING_MARKER).
 */
const FAILURE_MARKERS: [RegExp, string][] = [
  [/Press Enter for emergency shell|Starting Emergency Shell|You are in emergency mode/, 'emergency shell'],
  [/dracut: Refusing to continue/, 'dracut fatal'],
  [/Kernel panic - not syncing: (.*)/, 'kernel panic'],
  [/Oops:/, 'kernel oops'],
  [/WARNING: CPU: \d+ PID: \d+ at (.+)/, 'kernel warning'],
  [/rejecting I\/O to offline device/, 'failure of disk under I/O'],
  [
    /EXT4-fs \([^)]+\): Delayed block allocation failed for inode \d+ at logical offset \d+ with max blocks \d+ with (error \d+)/,
    'ext4 delayed allocation failure',
  ],
  [/((alloc|free) magic) (is )?broken/, 'GRUB memory corruption'],
  [/ignition\[[0-9]+\]: failed to fetch config: context canceled/, 'Ignition fetch cancellation race'],
  [/initrd-cleanup\.service: Main process exited, code=killed, status=15\/TERM/, 'initrd-cleanup.service terminated'],
  [/panic: (.*)/, 'Go panic'],
  [/SIGSEGV|=11\/SEGV/, 'segfault'],
  [/[Cc]ore dump/, 'core dump'],
  [/Ordering cycle found/, 'systemd ordering cycle'],
  [/invoked oom-killer/, 'oom killer'],
  [
    /(\/.*\/system-generators\/.*) (failed with exit status|terminated by signal|failed due to unknown reason)/,
    'systemd generator failure',
  ],
  // Not kola's. fedora-coreos-config emergency-shell.sh (0b634e3c): "Ignition has failed. Please ensure your config
  // is valid. …" on every console.
  [/Ignition has failed/, 'Ignition failed'],
  // glog's (and klog's) fatal line, `Fmmdd hh:mm:ss.uuuuuu <pid> <file>:<line>] <msg>` (openshift/pivot e31a72d
  // vendor/github.com/golang/glog/glog.go formatHeader): pivot and the machine-config daemon exit 255 after it.
  // Through a unit's console drop-in the line is as written; the MCD's journal follower prefixes `pivot.service: `.
  [/\bF\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\s+\d+ [\w.-]+:\d+\] /, 'fatal error'],
  // The machine-config daemon's firstboot: an attempt that failed, `glog.Warningf("error: %v")`, then a retry a
  // minute later, forever (MCO a57ca291 cmd/machine-config-daemon/firstboot_complete_machineconfig.go:65). The
  // node does not finish on its own: the first such line is the failure.
  [
    /\b[WE]\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\s+\d+ firstboot_complete_machineconfig\.go:\d+\] error: \S/,
    'machine-config daemon firstboot error',
  ],
  // rpm-ostree's and bootc's client: `error: <message>` on stderr and a non-zero exit (rpmostree-clientlib.cxx); on
  // the console as the unit's journal line, `rpm-ostree[PID]: error: …`. A bare `error: ` line counts only once an
  // update tool is at work in this boot (see TOOL_AT_WORK): GRUB prints the same prefix ("error: no suitable video
  // mode found." under OVMF without a video mode), before any tool runs.
  [/^(?:[\w.@-]+\[\d+\]: )?error: \S/, 'update tool error'],
  // systemd: a unit whose start failed (`[FAILED] Failed to start <unit>.`; with the "combined" status format,
  // `Failed to start <name> - <description>.`).
  [/^Failed to start .+/, 'unit failed to start'],
];

/**
 * An error a tool prints and its caller retries: podman's and skopeo's `Error: <message>` on stderr (through the unit's
 * console drop-in as written, or with the journal's `name[pid]: ` prefix). Not a failure by itself; a fatal line that
 * follows (pivot's "timed out waiting for the condition" after its retries) names it as its cause.
 */
const RETRIED_ERROR = /(?:^|\]: )Error: (\S.*)$/;

/** Failures whose own line says only that retries ran out: the reason adds the last retried error. */
const NEEDS_CAUSE: ReadonlySet<string> = new Set(['fatal error']);

/** A bare `error: ` line is an update tool's only after one of these facts of the boot (its pull or staging). */
const TOOL_AT_WORK = (seen: ReadonlySet<string>) => [...seen].some((fact) => fact.startsWith('pivot:'));

/** Failures that only repeat an earlier one of the same boot when it came first (see classifyLine). */
const CONSEQUENCES: ReadonlySet<string> = new Set(['unit failed to start', 'update tool error']);

/**
 * kola's "excessive bonding link status messages" (harness.go): `(?s:link status up for interface [^,]+, enabling it
 * in [0-9]+ ms.*?){10}`, ten in one console.
 */
const BONDING_MARKER = /link status up for interface [^,]+, enabling it in [0-9]+ ms/;
const BONDING_LIMIT = 10;

type Marker = { pattern: RegExp; fact: (match: RegExpExecArray, target: string | undefined) => Fact };
type Fact =
  | { kind: 'ignition'; ok: boolean }
  | { kind: 'pivot'; phase: PivotPhase; target: string }
  | { kind: 'skipped'; target: string; reason: string };

/** Progress markers of the real update tools (pivot, rpm-ostree, bootc, Ignition). */
const MARKERS: Marker[] = [
  // Ignition's own "Ignition finished successfully" (internal/main.go, v2.14) goes to the journal; a console shows
  // it only where the journal is forwarded there (the fixture's initramfs echoes it).
  { pattern: /Ignition finished successfully/, fact: () => ({ kind: 'ignition', ok: true }) },
  { pattern: /Ignition has failed/, fact: () => ({ kind: 'ignition', ok: false }) },
  // What a real console shows: systemd reaching ignition-complete.target (Description "Ignition Complete",
  // coreos/ignition fef845a7 dracut/30ignition/ignition-complete.target; first boot only), in the older and in the
  // "combined" status format, and the getty's /etc/issue lines from fedora-coreos-config
  // coreos-ignition-write-issues (48fa1e5b): "Ignition: ran on <date> (this boot)", "Ignition: user-provided
  // config was applied".
  {
    pattern: /Reached target (?:ignition-complete\.target(?: - Ignition Complete)?|Ignition Complete)\b/,
    fact: () => ({ kind: 'ignition', ok: true }),
  },
  { pattern: /^Ignition: ran on .+ \(this boot\)/, fact: () => ({ kind: 'ignition', ok: true }) },
  { pattern: /^Ignition: user-provided config was applied/, fact: () => ({ kind: 'ignition', ok: true }) },
  // openshift/pivot (e31a72d cmd/root.go): "Pivoting to: <version> (<csum>)", or "Pivoting to: <csum>" without a
  // version label (:333); rpm-ostree then stages it.
  {
    pattern: /Pivoting to: (\S+) \(([0-9a-f]{64})\)/,
    fact: (m, target) => ({ kind: 'pivot', phase: 'staging', target: target ?? `${m[1]} (${m[2]})` }),
  },
  {
    pattern: /Pivoting to: ([0-9a-f]{64})\s*$/,
    fact: (m, target) => ({ kind: 'pivot', phase: 'staging', target: target ?? m[1]! }),
  },
  {
    pattern: /Already at target pivot; exiting/,
    fact: (_m, target) => ({ kind: 'skipped', target: target ?? '', reason: 'already at target' }),
  },
  // pivot logs every command first (utils/run.go:16 "Running: <cmd> <args>"): its pull is
  // `podman pull -q [--authfile FILE] <pullspec>` (root.go). The machine-config daemon's legacy extraction runs
  // under `nice -- ionice -c 3` (MCO a57ca291 pkg/daemon/pivot/utils/run.go:73 RunExtBackground): `oc image extract
  // … <url>` (update.go:283), else its podman fallback `podman pull -q [--authfile FILE] <url>` (:227).
  {
    pattern:
      /Running: (?:nice -- ionice -c 3 )?(?:podman pull (?:-q )?(?:--authfile \S+ )?|oc image extract .* )(\S+)$/,
    // the pullspec named here is this pull's target (a later request names another than the first boot's)
    fact: (m) => ({ kind: 'pivot', phase: 'pulling', target: m[1]! }),
  },
  // The machine-config daemon (MCO a57ca291 pkg/daemon/update.go:1809 updateOS, :1925 updateLayeredOS): the target
  // before its legacy extraction or its rpm-ostree rebase.
  {
    pattern: /\] Updating OS to (?:layered image )?(\S+)$/,
    fact: (m) => ({ kind: 'pivot', phase: 'pulling', target: m[1]! }),
  },
  // rpm-ostree rebase ostree-unverified-registry:IMAGE / ostree-image-signed:...
  {
    pattern: /Pulling manifest: (?:ostree-[a-z-]+:)?(?:docker:\/\/)?(\S+)/,
    fact: (m) => ({ kind: 'pivot', phase: 'pulling', target: m[1]! }),
  },
  // bootc switch
  {
    pattern: /Fetching (?:ostree-[a-z-]+:)?(?:docker:\/\/)?(\S+)/,
    fact: (m, target) => ({ kind: 'pivot', phase: 'pulling', target: target ?? m[1]! }),
  },
  // rpm-ostree's progress (d5ef5f0c rust/src/console_progress.rs): "Staging deployment..." then "done" off a TTY,
  // "Staging deployment... done" on one; then the client's "Changes queued for next boot…"
  // (src/app/rpmostree-clientlib.cxx:703). bootc: "Queued for next boot: <image>" (deploy.rs).
  {
    pattern: /Staging deployment\.\.\.(?! ?done)/,
    fact: (_m, target) => ({ kind: 'pivot', phase: 'staging', target: target ?? '' }),
  },
  // bootc's line names the image (deploy.rs), so a staged pivot has its target even when the console lost the
  // "Fetching" line before it (lines of one boot interleave on the serial port).
  {
    pattern: /Queued for next boot: (?:ostree-[a-z-]+:)?(?:docker:\/\/)?(\S+)/,
    fact: (m, target) => ({ kind: 'pivot', phase: 'staged', target: target ?? m[1]! }),
  },
  {
    pattern: /Staging deployment\.\.\. ?done|Changes queued for next boot|Queued for next boot/,
    fact: (_m, target) => ({ kind: 'pivot', phase: 'staged', target: target ?? '' }),
  },
];

/**
 * A reboot the pivot asked for, once it staged something: pivot's `Running: systemctl reboot` (root.go, when
 * --reboot or /run/pivot/reboot-needed), systemd reaching reboot.target (Description "System Reboot" in systemd
 * 252, whose "combined" status format prints `reboot.target - System Reboot`; "Reboot" in older releases), and the
 * kernel's `reboot: Restarting system`, and the machine-config daemon's `initiating reboot: <rationale>` (MCO
 * a57ca291 pkg/daemon/update.go:2127).
 */
const REBOOT_MARKER =
  /reboot: Restarting system|Reached target (?:reboot\.target - )?(?:System )?Reboot\b|Running: systemctl reboot\b|\] initiating reboot: /;

/**
 * Ignition without a config (coreos-ignition-write-issues: "Ignition: no config provided by user"): devpivot always
 * hands one over fw_cfg, so the node booted without what devpivot wrote.
 */
const NO_CONFIG_MARKER = /^Ignition: no config provided by user/;

export function classify(state: ClassifierState, input: ClassifierInput): Classified {
  const node = input.node;
  switch (input.kind) {
    case 'vm.started':
    case 'vm.reboot':
      // A new boot: every fact may be reported again. The pivot target stays (the pullspec outlives a boot).
      return { state: { seen: new Set(), target: state.target, bondingLines: 0 }, events: [] };
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
  const progress = guestProgress(node, line);
  if (progress) return { state, events: [progress] };
  const at = line.indexOf(REPORT_PREFIX);
  if (at >= 0) return classifyReport(state, node, line.slice(at + REPORT_PREFIX.length), line);
  const refused = refusedRequest(line);
  if (refused) return fromFact(state, node, { kind: 'skipped', ...refused });
  const refusal = secureBootRefusal(line);
  if (refusal)
    return once(state, 'failure:secure-boot', [
      { kind: 'guest.failure', node, reason: `Secure Boot: ${refusal}: ${line}`, line, cause: 'secure-boot' },
    ]);
  const greenboot = greenbootFact(line, state.greenboot);
  if (greenboot) return fromGreenboot(state, node, greenboot, line);
  for (const [pattern, reason] of FAILURE_MARKERS) {
    if (!pattern.test(line)) continue;
    if (reason === 'update tool error' && line.startsWith('error: ') && !TOOL_AT_WORK(state.seen)) break;
    // A unit that fails, or a tool that exits with an error, after a failure this boot already reported is its
    // consequence (pivot's fatal line, then "Failed to start pivot.service"): one cause, one failure.
    if (CONSEQUENCES.has(reason) && [...state.seen].some((fact) => fact.startsWith('failure:'))) break;
    let next = state;
    const events: GuestEvent[] = [];
    if (reason === 'Ignition failed') {
      const ignition = once(next, 'ignition', [{ kind: 'guest.ignition', node, ok: false }]);
      next = ignition.state;
      events.push(...ignition.events);
    }
    const cause = NEEDS_CAUSE.has(reason) && state.lastError ? ` (last error before it: ${state.lastError})` : '';
    // A pull refused for TLS or credentials says so first (pull-cause.ts), in the client's own words.
    const pull = pullCause(`${line}${cause}`);
    const failure = once(next, `failure:${reason}`, [
      {
        kind: 'guest.failure',
        node,
        reason: `${pull ? `${pullCauseReason(pull)}: ` : ''}${reason}: ${line}${cause}`,
        line,
      },
    ]);
    return { state: failure.state, events: [...events, ...failure.events] };
  }
  if (NO_CONFIG_MARKER.test(line))
    return once(state, 'failure:no config', [
      { kind: 'guest.failure', node, reason: `Ignition got no config: ${line}`, line },
    ]);
  if (BONDING_MARKER.test(line)) {
    const bondingLines = (state.bondingLines ?? 0) + 1;
    const next = { ...state, bondingLines };
    if (bondingLines < BONDING_LIMIT) return { state: next, events: [] };
    return once(next, 'failure:bonding', [
      { kind: 'guest.failure', node, reason: `excessive bonding link status messages: ${line}`, line },
    ]);
  }
  for (const marker of MARKERS) {
    const match = marker.pattern.exec(line);
    if (match) return fromFact(state, node, marker.fact(match, state.target));
  }
  const retried = RETRIED_ERROR.exec(line);
  if (retried) return { state: { ...state, lastError: retried[1]! }, events: [] };
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
        {
          kind: 'guest.booted',
          node,
          bootId: str('bootId'),
          version: str('version'),
          commit: str('commit'),
          ...(str('image') ? { image: str('image') } : {}),
        },
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

/** One health verdict per boot (the failed check's own line comes first and names it) and one fallback. */
function fromGreenboot(
  state: ClassifierState,
  node: string,
  fact: NonNullable<ReturnType<typeof greenbootFact>>,
  line: string,
): Classified {
  switch (fact.kind) {
    case 'section':
      return { state: { ...state, greenboot: fact.section }, events: [] };
    case 'quiet':
      return { state, events: [] };
    case 'health':
      return once(state, 'health', [
        { kind: 'guest.health', node, ok: fact.ok, ...(fact.check ? { check: fact.check } : {}), line },
      ]);
    case 'fallback':
      return once(state, 'fallback', [{ kind: 'guest.fallback', node, tool: fact.tool, line }]);
  }
}

function once(state: ClassifierState, key: string, events: GuestEvent[]): Classified {
  if (state.seen.has(key)) return { state, events: [] };
  return { state: { ...state, seen: new Set([...state.seen, key]) }, events };
}
