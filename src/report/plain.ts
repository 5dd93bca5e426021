import type { Writable } from 'node:stream';
import type { EventFormatters, Stamped } from '../core/events.js';
import type { RunResult } from '../engine/engine.js';
import { formatDuration } from '../scenario/units.js';
import { printable, type Reporter } from './reporter.js';

/** How many console lines of a node to show when a step fails. */
const CONSOLE_TAIL = 25;

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const short = (digest: string) => digest.replace(/^sha256:/, '').slice(0, 12);

/**
 * One line per event that matters in a CI log; null for noise (console lines, requests, fine progress). The
 * mapped type makes the compiler demand a formatter for every event kind. Events are printed as they come: the
 * producers guarantee how often they emit (one finished `blob.progress` per blob response, one `vm.reboot`
 * per guest reboot), so a reporter never de-duplicates.
 */
export const plainFormatters: EventFormatters<string | null> = {
  log: (e) => (e.level === 'debug' ? null : `${e.level === 'info' ? '' : `${e.level}: `}${e.source}: ${e.message}`),
  'registry.listening': (e) =>
    `registry listening on ${e.url} (storage ${e.storage}${e.ca ? `; CA ${e.ca}: skopeo/podman --cert-dir its directory, curl --cacert` : ''})`,
  'registry.request': () => null,
  'registry.stopped': (e) => `registry stopped (${e.url})`,
  'registry.upstream': (e) =>
    e.outcome === 'failed'
      ? `registry: upstream ${e.what} ${e.repository}@${e.digest} failed: ${e.error ?? '?'}`
      : null,
  'blob.progress': (e) =>
    e.sent >= e.total ? `${e.node ?? e.client} pulled ${e.repository}@${short(e.digest)} (${mib(e.total)})` : null,
  'image.progress': () => null,
  'image.built': (e) => `built ${e.ref} version ${e.version} (commit ${e.commit.slice(0, 12)}, ${short(e.digest)})`,
  'image.pushed': (e) => `pushed ${e.ref}`,
  'image.pulled': (e) => `pulled ${e.ref} (${short(e.digest)})`,
  'vm.defined': (e) => `${e.node}: defined domain ${e.domain}`,
  'vm.started': (e) => `${e.node}: started`,
  'vm.console': () => null,
  'vm.reboot': (e) => `${e.node}: reboot`,
  'vm.stopped': (e) => `${e.node}: stopped (${e.reason})`,
  'vm.crashed': (e) => `${e.node}: CRASHED (${e.reason})`,
  'guest.ignition': (e) => `${e.node}: Ignition ${e.ok ? 'finished successfully' : 'FAILED'}`,
  'guest.pivot': (e) => `${e.node}: pivot ${e.phase} ${e.target}`,
  'guest.pivot.skipped': (e) => `${e.node}: pivot skipped (${e.reason})`,
  'guest.booted': (e) => `${e.node}: booted version ${e.version} (${e.commit.slice(0, 12)}, boot ${e.bootId})`,
  'guest.health': (e) =>
    e.ok
      ? `${e.node}: health checks passed (greenboot)`
      : `${e.node}: health check ${e.check ? `${e.check} ` : ''}failed (greenboot: the boot is red)`,
  'guest.fallback': (e) => `${e.node}: fell back to the previous deployment (greenboot ran ${e.tool} rollback)`,
  'guest.failure': (e) => `${e.node}: FAILURE ${e.reason}`,
  // Sparse: each step the tool reports, not its byte updates (a pull's partial bytes print nothing).
  'guest.progress': (e) =>
    e.partial
      ? null
      : `${e.node}: ${e.tool} ${e.task} ${e.steps}/${e.stepsTotal}${e.bytesTotal ? ` (${mib(e.bytes ?? 0)} of ${mib(e.bytesTotal)})` : ''}${e.subtask ? `: ${e.subtask}` : ''}`,
  'run.start': (e) => `scenario ${e.scenario}: nodes ${e.nodes.join(', ')}`,
  'step.start': (e) => `▶ ${e.name}`,
  'step.pass': (e) => `✓ ${e.name} (${formatDuration(e.ms)})`,
  'step.fail': (e) => `✗ ${e.name} (${formatDuration(e.ms)}): ${e.error}`,
  'run.end': (e) => `${e.ok ? 'PASSED' : 'FAILED'} in ${formatDuration(e.ms)}`,
};

export function formatPlain(event: Stamped): string | null {
  return (plainFormatters[event.kind] as (event: Stamped) => string | null)(event);
}

/**
 * Plain lines for CI and pipes, each with the time since the run started. When a step fails, the last console
 * lines of every node follow, so a CI log shows why without the console files.
 */
export function createPlainReporter(out: Writable): Reporter {
  let t0: number | undefined;
  const consoles = new Map<string, string[]>();
  const write = (at: number, line: string) => {
    t0 ??= at;
    out.write(`[${((at - t0) / 1000).toFixed(1).padStart(6)}s] ${printable(line)}\n`);
  };
  return {
    onEvent(event) {
      if (event.kind === 'vm.console') {
        const lines = consoles.get(event.node) ?? [];
        lines.push(event.line);
        if (lines.length > CONSOLE_TAIL) lines.shift();
        consoles.set(event.node, lines);
      }
      const line = formatPlain(event);
      if (line !== null) write(event.at, line);
      if (event.kind === 'step.fail') {
        for (const [node, lines] of consoles) {
          out.write(`--- last console lines of ${node} ---\n`);
          for (const text of lines) out.write(`${node} | ${printable(text)}\n`);
        }
      }
    },
    onEnd(result: RunResult) {
      for (const node of result.nodes) {
        const boots = node.boots.map((boot) => boot.version).join(' → ') || 'no boot reported';
        out.write(`  ${node.name}: ${boots}${node.consoleLog ? ` (console: ${node.consoleLog})` : ''}\n`);
      }
      if (result.kept) out.write('  VMs kept (--keep): remove them with `devpivot down`\n');
    },
  };
}
