/**
 * Where the guests' CPU goes, across whatever ran (the whole VM suite, a bench): the suite is CPU-bound on its
 * QEMU processes (bench/RESULTS.md 2026-12-06), so this counts CPU seconds, not wall time.
 *
 *   node dist/bench/guest-cpu.js sample FILE           every 2 s, each qemu-system-x86_64 process's CPU (utime +
 *                                                      stime) and its domain name, appended to FILE, until stopped
 *   node dist/bench/guest-cpu.js report FILE EVENTS    those samples attributed to each node's phase at the time,
 *                                                      from the runs' NDJSON in EVENTS (DEVPIVOT_TEST_EVENTS_DIR of
 *                                                      the VM tests, EVENTS= of bench:pivot)
 *
 * A phase starts at its marker: `vm.started`/`vm.reboot` (firmware + GRUB), GRUB's `starting the kernel` (the
 * kernel decompressing itself), the kernel banner, the initramfs's first line, systemd's `Welcome to` (userspace,
 * first boot or later), the report (`guest.booted`: up), the pivot's phases and the tools' progress tasks. A process
 * is a domain's QEMU: devpivot restarts QEMU on a guest reboot, so one domain has several in turn.
 */
import { appendFileSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

const HZ = 100; // USER_HZ, what /proc/PID/stat counts in on Linux

function sample(file: string): void {
  const once = () => {
    const now = Date.now();
    const lines: string[] = [];
    for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
      try {
        if (!readlinkSync(`/proc/${pid}/exe`).endsWith('/qemu-system-x86_64')) continue;
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const name = args[args.indexOf('-name') + 1]?.split(',')[0]?.replace(/^guest=/, '') ?? '';
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const ticks = Number(fields[11]) + Number(fields[12]);
        lines.push(`${now} ${pid} ${name} ${(ticks / HZ).toFixed(2)}`);
      } catch {
        // the process ended, or is not ours to read
      }
    }
    if (lines.length > 0) appendFileSync(file, `${lines.join('\n')}\n`);
  };
  once();
  setInterval(once, 2000);
}

interface Mark {
  at: number;
  phase: string;
}

const UP = 'up (idle, ssh steps, waiting)';

function phaseOf(event: Record<string, unknown>): string | undefined {
  switch (event.kind) {
    case 'vm.started':
    case 'vm.reboot':
      return 'boot: firmware + GRUB';
    case 'vm.console': {
      const line = String(event.line ?? '');
      if (line.includes('fixture-grub: starting the kernel')) return 'boot: kernel decompression';
      if (line.startsWith('[    0.000000] Linux version')) return 'boot: kernel';
      if (line.startsWith('fixture-initramfs: started')) return 'boot: initramfs';
      if (line.startsWith('Welcome to ')) return 'boot: userspace';
      return undefined;
    }
    case 'guest.booted':
    case 'guest.pivot.skipped':
    case 'guest.failure':
      return UP;
    case 'guest.pivot':
      return `update: ${String(event.phase)}`;
    case 'guest.progress':
      return `update: ${String(event.task)}`;
    case 'vm.stopped':
      return 'stopped';
    default:
      return undefined;
  }
}

/** Each domain's phases in time order, from every NDJSON file in `dir`. */
function marksOf(dir: string): Map<string, Mark[]> {
  const marks = new Map<string, Mark[]>();
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.ndjson'))) {
    const domains = new Map<string, string>();
    for (const text of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (!text) continue;
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(text) as Record<string, unknown>;
      } catch {
        continue;
      }
      const node = event.node as string | undefined;
      if (!node) continue;
      if ((event.kind === 'vm.defined' || event.kind === 'vm.started') && typeof event.domain === 'string')
        domains.set(node, event.domain);
      const phase = phaseOf(event);
      const domain = domains.get(node);
      if (!phase || !domain) continue;
      if (!marks.has(domain)) marks.set(domain, []);
      marks.get(domain)!.push({ at: Number(event.at), phase });
    }
  }
  for (const list of marks.values()) {
    list.sort((a, b) => a.at - b.at);
    // a node's first boot (Ignition, presets, host keys) apart from its later ones
    let booted = false;
    for (const [i, mark] of list.entries()) {
      if (mark.phase === 'boot: userspace') {
        mark.phase = booted ? 'boot: userspace, a later boot' : 'boot: userspace, first boot';
        booted = true;
      }
      // up, then the pivot starting: the tool's own start (status, the pivot's preamble)
      if (mark.phase === UP && list[i + 1]?.phase.startsWith('update: pulling')) mark.phase = 'up → pulling';
    }
  }
  return marks;
}

function report(file: string, dir: string): void {
  const marks = marksOf(dir);
  const byProcess = new Map<string, { domain: string; points: [number, number][] }>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [at, pid, domain, cpu] = line.split(' ');
    if (!cpu || !domain) continue;
    const key = `${pid} ${domain}`;
    if (!byProcess.has(key)) byProcess.set(key, { domain, points: [] });
    byProcess.get(key)!.points.push([Number(at), Number(cpu)]);
  }
  const byPhase = new Map<string, number>();
  let total = 0;
  let unattributed = 0;
  for (const { domain, points } of byProcess.values()) {
    const list = marks.get(domain);
    let previous: [number, number] | undefined;
    for (const point of points) {
      // a process's first sample counts from its start (0 CPU)
      const spent = point[1] - (previous?.[1] ?? 0);
      const middle = previous ? (previous[0] + point[0]) / 2 : point[0];
      previous = point;
      total += spent;
      const mark = list?.findLast((m) => m.at <= middle);
      if (!mark) {
        unattributed += spent;
        continue;
      }
      byPhase.set(mark.phase, (byPhase.get(mark.phase) ?? 0) + spent);
    }
  }
  const boots = [...marks.values()].flat().filter((m) => m.phase === 'boot: kernel decompression').length;
  process.stdout.write(`| phase | QEMU CPU (s) | share |\n|---|---|---|\n`);
  for (const [phase, seconds] of [...byPhase].sort((a, b) => b[1] - a[1]))
    process.stdout.write(`| ${phase} | ${seconds.toFixed(0)} | ${((100 * seconds) / total).toFixed(1)} % |\n`);
  process.stdout.write(
    `| (no events for its domain) | ${unattributed.toFixed(0)} | ${((100 * unattributed) / total).toFixed(1)} % |\n`,
  );
  process.stdout.write(`\n${total.toFixed(0)} core-seconds of QEMU in ${byProcess.size} processes; ${boots} boots\n`);
}

const [mode, file, dir] = process.argv.slice(2);
if (mode === 'sample' && file) sample(file);
else if (mode === 'report' && file && dir) report(file, dir);
else {
  process.stderr.write('usage: guest-cpu.js sample FILE | guest-cpu.js report FILE EVENTS_DIR\n');
  process.exitCode = 2;
}
