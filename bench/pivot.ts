/**
 * `npm run bench:pivot`: the end-to-end pivot, timed from the outside. Runs `devpivot run --json` on
 * scenarios/old-to-new.yaml and scenarios/two-nodes.yaml under GNU time, and prints per-phase times (from the
 * events' own timestamps), devpivot's CPU share of one core and its peak RSS, and the two-node/one-node ratio.
 * Not a test: a benchmark that prints a table. RUNS=N repeats each scenario (median reported).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

interface Event {
  kind: string;
  at: number;
  node?: string;
  phase?: string;
  version?: string;
  ok?: boolean;
  line?: string;
}

interface Measured {
  ok: boolean;
  wallS: number;
  cpuS: number;
  peakRssMiB: number;
  /** Seconds from the first event to each phase's first occurrence (last node for multi-node runs). */
  phases: Map<string, number>;
  /** Per boot of the first node: seconds spent in each boot phase (BOOT_PHASES). */
  boots: Map<string, number>[];
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

/**
 * Boot phases, each ending at the first console line that matches: firmware and GRUB end when the kernel prints
 * its banner, the kernel when it runs the initramfs, the initramfs when the root's init starts (systemd's banner;
 * `fixture-init:` was the pre-systemd fixture's init), userspace when the boot report arrives.
 */
const BOOT_PHASES: [string, (event: Event) => boolean][] = [
  ['firmware+grub', (e) => e.kind === 'vm.console' && /Linux version \d/.test(e.line ?? '')],
  ['kernel', (e) => e.kind === 'vm.console' && /Run \/init as init process/.test(e.line ?? '')],
  [
    'initramfs',
    (e) => e.kind === 'vm.console' && /systemd\[1\]: systemd \d+|Welcome to |fixture-init: /.test(e.line ?? ''),
  ],
  ['userspace ready', (e) => e.kind === 'guest.booted'],
];

/** Split the first node's events into boots (at vm.started / vm.reboot) and time each boot phase. */
function bootPhases(events: Event[]): Map<string, number>[] {
  const node = events.find((e) => e.kind === 'vm.started')?.node;
  const boots: Map<string, number>[] = [];
  let start = 0;
  let next = 0;
  let current: Map<string, number> | undefined;
  for (const event of events) {
    if (event.node !== node) continue;
    if (event.kind === 'vm.started' || event.kind === 'vm.reboot') {
      current = new Map();
      boots.push(current);
      start = event.at;
      next = 0;
      continue;
    }
    if (!current || next >= BOOT_PHASES.length) continue;
    // A phase whose marker never shows (a guest without it) is skipped: the next marker closes both.
    for (let i = next; i < BOOT_PHASES.length; i++) {
      if (!BOOT_PHASES[i]![1](event)) continue;
      current.set(BOOT_PHASES[i]![0], (event.at - start) / 1000);
      start = event.at;
      next = i + 1;
      break;
    }
  }
  return boots;
}

function runScenario(file: string): Promise<Measured> {
  return new Promise((resolve, reject) => {
    // GNU time reports the CPU of devpivot and the tools it waits for (ostree, skopeo); QEMU is libvirtd's child.
    const child = spawn(
      '/usr/bin/time',
      ['-f', 'TIME %e %U %S %M', process.execPath, `${root}bin/devpivot.js`, 'run', '--json', file],
      { cwd: root, env: { ...process.env, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', () => {
      const time = /TIME (\S+) (\S+) (\S+) (\d+)/.exec(stderr);
      if (!time) return reject(new Error(`no timing from /usr/bin/time:\n${stderr.slice(-2000)}`));
      const events = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Event);
      const t0 = events[0]?.at ?? 0;
      const phases = new Map<string, number>();
      for (const [name, match] of PHASES) {
        const hits = events.filter(match);
        if (hits.length > 0) phases.set(name, (hits.at(name.startsWith('booted v2') ? -1 : 0)!.at - t0) / 1000);
      }
      const end = events.find((event) => event.kind === 'run.end');
      resolve({
        ok: end?.ok === true,
        wallS: Number(time[1]),
        cpuS: Number(time[2]) + Number(time[3]),
        peakRssMiB: Number(time[4]) / 1024,
        phases,
        boots: bootPhases(events),
      });
    });
  });
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

const one = await measure('scenarios/old-to-new.yaml');
// TWO_NODES=0 skips the two-node run (the boot-phase table needs only the first).
const two = process.env.TWO_NODES === '0' ? [] : await measure('scenarios/two-nodes.yaml');

const rows: string[][] = [['phase (s from start)', 'one node', 'two nodes']];
for (const [name] of PHASES)
  rows.push([name, pick(one, (r) => r.phases.get(name)), pick(two, (r) => r.phases.get(name))]);
rows.push(['wall time (s)', pick(one, (r) => r.wallS), pick(two, (r) => r.wallS)]);
rows.push(['devpivot CPU (s)', pick(one, (r) => r.cpuS), pick(two, (r) => r.cpuS)]);
rows.push([
  'devpivot CPU (% of one core)',
  pick(one, (r) => (100 * r.cpuS) / r.wallS),
  pick(two, (r) => (100 * r.cpuS) / r.wallS),
]);
rows.push(['devpivot peak RSS (MiB)', pick(one, (r) => r.peakRssMiB), pick(two, (r) => r.peakRssMiB)]);
rows.push(['passed', one.map((r) => r.ok).join(','), two.map((r) => r.ok).join(',')]);
const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
for (const [i, row] of rows.entries()) {
  process.stdout.write(`| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |\n`);
  if (i === 0) process.stdout.write(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|\n`);
}
const ratio =
  median(two.map((r) => r.phases.get('booted v2') ?? Number.NaN)) /
  median(one.map((r) => r.phases.get('booted v2') ?? Number.NaN));
process.stdout.write('\n| boot phase (s), one node | boot 1 (v1, Ignition) | boot 2 (v2) |\n|---|---|---|\n');
for (const [name] of [...BOOT_PHASES, ['total']] as [string][]) {
  const get = (boot: number) =>
    pick(one, (r) =>
      name === 'total'
        ? [...(r.boots[boot]?.values() ?? [])].reduce((a, b) => a + b, 0) || undefined
        : r.boots[boot]?.get(name),
    );
  process.stdout.write(`| ${name} | ${get(0)} | ${get(1)} |\n`);
}
process.stdout.write(`\nstart → booted v2: two nodes / one node = ${ratio.toFixed(2)}× (target ≤ 2×)\n`);
process.stdout.write('targets under TCG: ≤ 35 s end to end, devpivot ≤ 5 % of one core\n');
