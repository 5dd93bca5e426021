/**
 * Where one node's pivot spends its time: its event stream (devpivot's events and the guest's console lines, each
 * stamped when devpivot read it) cut at markers into consecutive phases, from vm.started to the second boot's report.
 * The console markers are the guest's own lines (kernel banner, `Run /init`, systemd's banner), so a phase is the
 * guest's time between two things it printed; the serial console adds the same small delay at both ends.
 */

export interface SplitEvent {
  kind: string;
  at: number;
  node?: string;
  phase?: string;
  version?: string;
  line?: string;
  sent?: number;
  total?: number;
}

type Match = (event: SplitEvent) => boolean;
const consoleLine =
  (pattern: RegExp): Match =>
  (e) =>
    e.kind === 'vm.console' && pattern.test(e.line ?? '');

/** A boot's phases, each ending at its marker; a marker that never shows merges its phase into the next. */
const BOOT: [string, Match][] = [
  ['firmware + bootloader', consoleLine(/Linux version \d/)],
  ['kernel', consoleLine(/Run \/init as init process/)],
  // systemd's banner as the root's init starts (`fixture-init:` was the pre-systemd fixture's init).
  ['initramfs', consoleLine(/systemd\[1\]: systemd \d+|Welcome to |fixture-init: /)],
];

/** The row names, in order: what bench:pivot prints per node. */
export const SPLIT_ROWS = [
  ...BOOT.map(([name]) => `boot 1: ${name}${name === 'initramfs' ? ' (Ignition)' : ''}`),
  'boot 1: userspace to the pivot',
  'pull',
  'import',
  'stage',
  'shutdown + finalize',
  ...BOOT.map(([name]) => `boot 2: ${name}`),
  'boot 2: userspace to the report',
  'total',
] as const;

/** Seconds per row for `node` (SPLIT_ROWS; a row whose marker is missing merges into the next one). */
export function splitPivot(all: SplitEvent[], node: string): Map<string, number> {
  const events = all.filter((e) => e.node === node);
  const out = new Map<string, number>();
  const first = events.findIndex((e) => e.kind === 'vm.started');
  if (first < 0) return out;
  const reboot = events.findIndex((e) => e.kind === 'vm.reboot');
  const end = reboot < 0 ? events.length : reboot;
  const staging = events.findIndex((e) => e.kind === 'guest.pivot' && e.phase === 'staging');
  // The pull's end: the last blob the node's registry port sent in full before the guest said it stages.
  let pulled = -1;
  for (let i = first; i < (staging < 0 ? end : staging); i++) {
    const e = events[i]!;
    if (e.kind === 'blob.progress' && (e.total ?? 0) > 0 && (e.sent ?? 0) >= (e.total ?? 0)) pulled = i;
  }
  const at =
    (index: number): Match =>
    (e) =>
      events.indexOf(e) === index;
  // Each marker with the part of the stream it is looked for in: the first boot before the reboot, the second after.
  const markers: [string, Match, number, number][] = [
    ...BOOT.map(([, match], i): [string, Match, number, number] => [SPLIT_ROWS[i]!, match, first, end]),
    ['boot 1: userspace to the pivot', (e) => e.kind === 'guest.pivot' && e.phase === 'pulling', first, end],
    ['pull', at(pulled), first, end],
    ['import', at(staging), first, end],
    ['stage', (e) => e.kind === 'guest.pivot' && e.phase === 'staged', first, end],
    ['shutdown + finalize', at(reboot), first, events.length],
    ...BOOT.map(([name, match]): [string, Match, number, number] => [`boot 2: ${name}`, match, end, events.length]),
    ['boot 2: userspace to the report', (e) => e.kind === 'guest.booted', end, events.length],
  ];
  const t0 = events[first]!.at;
  let last = first;
  for (const [name, match, from, to] of markers) {
    let hit = -1;
    for (let i = Math.max(last + 1, from); i < to && hit < 0; i++) if (match(events[i]!)) hit = i;
    if (hit < 0) continue;
    out.set(name, (events[hit]!.at - events[last]!.at) / 1000);
    last = hit;
  }
  if (last > first) out.set('total', (events[last]!.at - t0) / 1000);
  return out;
}
