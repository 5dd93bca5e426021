/**
 * `npm run bench:pivot`: the end-to-end pivot, timed from the outside. Runs `devpivot run --json` on
 * scenarios/old-to-new.yaml, two-nodes.yaml and four-nodes.yaml under GNU time, then the same one-node pivot
 * through a raw harness (bench/raw-pivot.ts: virsh, a static file registry, the same Ignition), and prints
 * per-phase times (seconds from the spawn, from the events' own timestamps), devpivot's CPU share of one core,
 * its peak RSS, the four/one ratio and devpivot/raw, each beside its target (issue 15 items 4 and 5).
 * Not a test: a benchmark that prints a table. RUNS=N repeats each scenario (median reported); NODES=1,4 picks
 * the devpivot runs; RAW=0 skips the raw harness; EVENTS=dir keeps each run's NDJSON there.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RawHarness, type RawResult } from './raw-pivot.js';
import { SPLIT_ROWS, splitPivot } from './split.js';

interface Event {
  kind: string;
  at: number;
  node?: string;
  phase?: string;
  version?: string;
  ok?: boolean;
  line?: string;
  ref?: string;
}

interface Measured {
  ok: boolean;
  wallS: number;
  cpuS: number;
  /** GNU time's %M: the largest peak of devpivot and the children it waited for (ssh-keygen, ostree...). */
  peakRssMiB: number;
  /** VmHWM of devpivot's own node process (polled every 250 ms). */
  ownHwmMiB?: number;
  /** The fixture v2 oscontainer as pushed: `host:port/devpivot/fixture-2@sha256:…`. */
  pushed?: string;
  /** bench/memory-probe.ts's sample at the highest RSS, and the last event before it (what devpivot was doing). */
  peak?: MemorySample & { during: string };
  /** Seconds from the spawn to each phase's first occurrence (last node for multi-node runs). */
  phases: Map<string, number>;
  /** Per node: seconds in each phase of its pivot (bench/split.ts, SPLIT_ROWS). */
  splits: Map<string, Map<string, number>>;
}

interface MemorySample {
  at: number;
  rss: number;
  hwm: number;
  anon: number;
  file: number;
  threads: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const RUNS = Number.parseInt(process.env.RUNS ?? '1', 10);

/** Phase names in the order a pivot goes through them, each matched on the event stream. */
const PHASES: [string, (event: Event) => boolean][] = [
  ['registry up', (e) => e.kind === 'registry.listening'],
  ['oscontainer pushed', (e) => e.kind === 'image.pushed'],
  ['vm started', (e) => e.kind === 'vm.started'],
  ['booted v1', (e) => e.kind === 'guest.booted' && e.version === '1'],
  ['ignition done', (e) => e.kind === 'guest.ignition'],
  ['pulling', (e) => e.kind === 'guest.pivot' && e.phase === 'pulling'],
  ['staged', (e) => e.kind === 'guest.pivot' && e.phase === 'staged'],
  ['reboot', (e) => e.kind === 'vm.reboot'],
  ['booted v2', (e) => e.kind === 'guest.booted' && e.version === '2'],
  ['run end', (e) => e.kind === 'run.end'],
];

/** The node process GNU time started (its only child): its own VmHWM is read while it runs. */
function childOf(pid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return children ? Number(children.split(' ')[0]) : undefined;
  } catch {
    return undefined;
  }
}

function vmHwmKiB(pid: number): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The devpivot child being measured, so that Ctrl-C can stop it (devpivot then cleans up what it made). */
let current: ChildProcess | undefined;

const PROBE = fileURLToPath(new URL('./memory-probe.js', import.meta.url));

/** The probe's sample with the highest RSS, and the kind (and node) of the last event before it. */
function peakOf(memlog: string, events: Event[]): Measured['peak'] {
  let samples: MemorySample[];
  try {
    samples = readFileSync(memlog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as MemorySample);
  } finally {
    rmSync(memlog, { force: true });
  }
  const top = samples.reduce<MemorySample | undefined>((best, s) => (best && best.rss >= s.rss ? best : s), undefined);
  if (!top) return undefined;
  const before = events.filter((e) => e.at <= top.at).at(-1);
  return { ...top, during: before ? `${before.kind}${before.node ? ` ${before.node}` : ''}` : 'start-up' };
}

function runScenario(file: string): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const spawned = Date.now();
    const memlog = join(tmpdir(), `devpivot-bench-${process.pid}-${spawned}.memlog`);
    // GNU time reports the CPU of devpivot and the tools it waits for (ostree, skopeo); QEMU is libvirtd's child.
    const child = spawn(
      '/usr/bin/time',
      ['-f', 'TIME %e %U %S %M', process.execPath, `${root}bin/devpivot.js`, 'run', '--json', file],
      {
        cwd: root,
        env: {
          ...process.env,
          CI: 'true',
          DEVPIVOT_BENCH_MEMLOG: memlog,
          NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${PROBE}`.trim(),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    current = child;
    // devpivot's own peak (VmHWM of its node process), apart from GNU time's figure, which is the largest of the
    // process and the children it waited for: the last reading before it exits.
    let ownHwm: number | undefined;
    const poll = setInterval(() => {
      const pid = child.pid === undefined ? undefined : childOf(child.pid);
      const hwm = pid === undefined ? undefined : vmHwmKiB(pid);
      if (hwm !== undefined) ownHwm = Math.max(ownHwm ?? 0, hwm);
    }, 250);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', () => {
      clearInterval(poll);
      current = undefined;
      const time = /TIME (\S+) (\S+) (\S+) (\d+)/.exec(stderr);
      if (!time) return reject(new Error(`no timing from /usr/bin/time:\n${stderr.slice(-2000)}`));
      // EVENTS=dir keeps each run's NDJSON (to split again, or read what the guest printed).
      if (process.env.EVENTS)
        writeFileSync(join(process.env.EVENTS, `${basename(file, '.yaml')}-${spawned}.ndjson`), stdout);
      const events = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Event);
      // From the spawn: devpivot's start-up (node, imports) is part of what it costs.
      const phases = new Map<string, number>();
      for (const [name, match] of PHASES) {
        const hits = events.filter(match);
        if (hits.length > 0) phases.set(name, (hits.at(name.startsWith('booted v2') ? -1 : 0)!.at - spawned) / 1000);
      }
      const end = events.find((event) => event.kind === 'run.end');
      const pushed = events.find(
        (event) => event.kind === 'image.pushed' && /\/devpivot\/fixture-2@/.test(event.ref ?? ''),
      );
      resolve({
        ok: end?.ok === true,
        wallS: Number(time[1]),
        cpuS: Number(time[2]) + Number(time[3]),
        peakRssMiB: Number(time[4]) / 1024,
        ...(ownHwm !== undefined ? { ownHwmMiB: ownHwm / 1024 } : {}),
        phases,
        splits: new Map(nodesOf(events).map((node) => [node, splitPivot(events, node)])),
        ...(pushed?.ref ? { pushed: pushed.ref } : {}),
        peak: peakOf(memlog, events),
      });
    });
  });
}

/** The nodes in the order they started. */
function nodesOf(events: Event[]): string[] {
  return [...new Set(events.filter((e) => e.kind === 'vm.started' && e.node).map((e) => e.node!))];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function measure(file: string): Promise<Measured[]> {
  const runs: Measured[] = [];
  for (let i = 0; i < RUNS; i++) {
    process.stdout.write(`  ${file} run ${i + 1}/${RUNS} ...\n`);
    runs.push(await runScenario(file));
  }
  return runs;
}

function pick(runs: Measured[], get: (run: Measured) => number | undefined): string {
  const values = runs.map(get).filter((value): value is number => value !== undefined);
  return values.length === 0 ? '—' : median(values).toFixed(1);
}

const SCENARIOS: Record<string, string> = {
  '1': 'scenarios/old-to-new.yaml',
  '2': 'scenarios/two-nodes.yaml',
  '4': 'scenarios/four-nodes.yaml',
};
const counts = (process.env.NODES ?? '1,2,4').split(',').filter((n) => n in SCENARIOS);
if (!counts.includes('1')) counts.unshift('1'); // the ratios and the raw harness's image need the one-node run

const raw = new RawHarness();
// Ctrl-C: devpivot (same process group) cleans up its own; the raw harness removes its domain, files and server.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    // Wait for devpivot's own clean-up (it removes its VM on the signal); exiting first left the domain running.
    const child = current;
    const closed = new Promise((resolve) =>
      child && child.exitCode === null ? child.once('close', resolve) : resolve(0),
    );
    child?.kill(signal);
    void Promise.all([closed, raw.cleanup()]).finally(() => process.exit(130));
  });
}

const results = new Map<string, Measured[]>();
results.set('1', await measure(SCENARIOS['1']!));
const one = results.get('1')!;

// The raw harness right after the one-node run (same host load), before the longer multi-node runs.
const raws: RawResult[] = [];
const target = one.find((r) => r.pushed)?.pushed;
if (process.env.RAW !== '0') {
  if (!target) throw new Error('the one-node run pushed no fixture-2 oscontainer: the raw harness has nothing to pull');
  const at = target.indexOf('@');
  const repository = target.slice(target.indexOf('/') + 1, at);
  for (let i = 0; i < RUNS; i++) {
    process.stdout.write(`  raw harness (virsh + static registry) run ${i + 1}/${RUNS} ...\n`);
    const result = await raw.run({ repository, digest: target.slice(at + 1) }, 15 * 60_000);
    if (!result.ok) process.stdout.write(`  raw harness failed: ${result.error}\n`);
    else process.stdout.write(`  raw harness: ${result.requests.length} requests (${result.requests.join(', ')})\n`);
    raws.push(result);
  }
}
for (const count of counts.filter((count) => count !== '1')) results.set(count, await measure(SCENARIOS[count]!));

const label = (count: string) => (count === '1' ? 'one node' : `${count} nodes`);
const rows: string[][] = [['phase (s from spawn)', ...counts.map(label), 'raw (1 node)']];
const column = (get: (run: Measured) => number | undefined) => counts.map((count) => pick(results.get(count)!, get));
const rawBooted = median(raws.filter((r) => r.ok).map((r) => r.bootedV2S));
for (const [name] of PHASES)
  rows.push([name, ...column((r) => r.phases.get(name)), name === 'booted v2' ? rawBooted.toFixed(1) : '']);
rows.push(['wall time (s)', ...column((r) => r.wallS), '']);
rows.push(['devpivot CPU (s)', ...column((r) => r.cpuS), '']);
rows.push(['devpivot CPU (% of one core)', ...column((r) => (100 * r.cpuS) / r.wallS), '']);
rows.push(['peak RSS, devpivot process (MiB)', ...column((r) => r.ownHwmMiB), '']);
rows.push(['peak RSS, GNU time %M (MiB)', ...column((r) => r.peakRssMiB), '']);
rows.push([
  'passed',
  ...counts.map((count) =>
    results
      .get(count)!
      .map((r) => r.ok)
      .join(','),
  ),
  raws.map((r) => r.ok).join(','),
]);
if (raws.length === 0) for (const row of rows) row.pop(); // RAW=0: no raw column (it printed NaN)
const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
for (const [i, row] of rows.entries()) {
  process.stdout.write(`| ${row.map((cell, col) => cell.padEnd(widths[col]!)).join(' | ')} |\n`);
  if (i === 0) process.stdout.write(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|\n`);
}
// Per node and phase (bench/split.ts): where each node's seconds go, VM start → its second boot's report. The raw
// harness's column is its whole run (it has no event stream): the floor the one-node total compares with.
for (const count of counts) {
  const runs = results.get(count)!;
  const nodes = [...(runs[0]?.splits.keys() ?? [])];
  const header = [
    'phase (s), ' + label(count),
    ...nodes,
    ...(count === '1' && raws.length > 0 ? ['raw (1 node)'] : []),
  ];
  process.stdout.write(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n`);
  for (const row of SPLIT_ROWS) {
    const cells = nodes.map((node) => pick(runs, (r) => r.splits.get(node)?.get(row)));
    if (count === '1' && raws.length > 0) cells.push(row === 'total' ? rawBooted.toFixed(1) : '');
    process.stdout.write(`| ${row} | ${cells.join(' | ')} |\n`);
  }
}
const bootedV2 = (count: string) =>
  median((results.get(count) ?? []).map((r) => r.phases.get('booted v2') ?? Number.NaN));
process.stdout.write('\n');
if (results.has('2'))
  process.stdout.write(
    `spawn → booted v2: two nodes / one node = ${(bootedV2('2') / bootedV2('1')).toFixed(2)}× (target ≤ 2×)\n`,
  );
if (results.has('4'))
  process.stdout.write(
    `spawn → booted v2: four nodes / one node = ${(bootedV2('4') / bootedV2('1')).toFixed(2)}× (target ≤ 2.5×)\n`,
  );
if (raws.length > 0)
  process.stdout.write(
    `one node, start → booted v2: devpivot / raw = ${(bootedV2('1') / rawBooted).toFixed(2)}× (target ≤ 1.15×)\n`,
  );
const peak = (count: string) => pick(results.get(count) ?? [], (r) => r.ownHwmMiB);
process.stdout.write(
  `devpivot peak RSS: ${counts.map((count) => `${label(count)} ${peak(count)} MiB`).join(', ')} (target ≤ 150 MiB for four nodes)\n`,
);
process.stdout.write('\nat the highest RSS of each run (MiB; bench/memory-probe.ts):\n');
for (const count of counts) {
  for (const [i, run] of results.get(count)!.entries()) {
    const p = run.peak;
    if (!p) continue;
    process.stdout.write(
      `  ${label(count)} #${i + 1}: rss ${p.rss} (anon ${p.anon}, file ${p.file}), V8 heap ${p.heapTotal} ` +
        `(used ${p.heapUsed}), external ${p.external} (arrayBuffers ${p.arrayBuffers}), ${p.threads} threads; ` +
        `after ${p.during}\n`,
    );
  }
}
process.stdout.write('targets under TCG: ≤ 35 s end to end, devpivot ≤ 5 % of one core\n');
