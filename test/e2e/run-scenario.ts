import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Stamped } from '../../src/core/events.js';
import { repoRoot } from '../helpers/cli.js';

export interface ScenarioRun {
  code: number | null;
  events: Stamped[];
  stderr: string;
  /** `✓ name` / `✗ name: error` per finished step. */
  steps: string[];
}

/**
 * Below ava.vm.config.js's 10 m test timeout: the run is stopped with SIGTERM (and removes its VMs) before ava gives
 * up on the test. A run still going when ava times out is orphaned, its VMs taking CPU from the files after it.
 */
const DEFAULT_TIMEOUT_MS = 9.5 * 60_000;

/**
 * Run a shipped scenario end to end with the real CLI (`devpivot run FILE --json`), as CI would: real registry,
 * real oscontainer build, real Ignition, real libvirt VMs under TCG. Domains are named
 * devpivot-test-engine-<session suffix>-<node>. With DEVPIVOT_TEST_EVENTS_DIR set, the run's events are kept there
 * (the directory made if missing) as `<name>.ndjson` (for `bench/split.ts`-style timing of a test's run).
 */
export function runScenarioCli(
  name: string,
  options: {
    extraArgs?: string[];
    /** Default DEFAULT_TIMEOUT_MS; a test that sets a longer `t.timeout` sets this below it. */
    timeoutMs?: number;
    onEvent?: (event: Stamped, kill: (signal: NodeJS.Signals) => void) => void;
    /** A scenario file elsewhere (a test's own); `name` then only names the session. */
    file?: string;
    /** The command and its operands instead of `run FILE` (e.g. `['up', '--os-image', REF]`). */
    command?: string[];
    /** Added to the environment (e.g. DEVPIVOT_STATE_DIR: a registry store of the test's own). */
    env?: NodeJS.ProcessEnv;
    /**
     * Run as another user (`runuser -u USER -- env -i ENV... node BIN ...`): with only `env` as environment and
     * `repo` as the checkout (one that user can read).
     */
    runAs?: { user: string; env: NodeJS.ProcessEnv; repo: string };
  } = {},
): Promise<ScenarioRun> {
  return new Promise((resolve, reject) => {
    const repo = options.runAs?.repo ?? repoRoot;
    const args = [
      `${repo}bin/devpivot.js`,
      ...(options.command ?? ['run', options.file ?? `${repo}scenarios/${name}.yaml`]),
      '--json',
      '--session',
      session(name),
      ...(options.extraArgs ?? []),
    ];
    const runAs = options.runAs;
    const child = runAs
      ? spawn(
          'runuser',
          [
            '-u',
            runAs.user,
            '--',
            'env',
            '-i',
            ...Object.entries({ ...runAs.env, CI: 'true' }).map(([key, value]) => `${key}=${value}`),
            process.execPath,
            ...args,
          ],
          { stdio: ['ignore', 'pipe', 'pipe'], cwd: repo },
        )
      : spawn(process.execPath, args, {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, ...options.env, CI: 'true' },
        });
    const events: Stamped[] = [];
    let pending = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error(`scenario ${name} did not finish in ${options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`));
    }, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (!line) continue;
        const event = JSON.parse(line) as Stamped;
        events.push(event);
        options.onEvent?.(event, (signal) => child.kill(signal));
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const steps = events.flatMap((event) =>
        event.kind === 'step.pass'
          ? [`✓ ${event.name}`]
          : event.kind === 'step.fail'
            ? [`✗ ${event.name}: ${event.error}`]
            : [],
      );
      const keep = process.env.DEVPIVOT_TEST_EVENTS_DIR;
      if (keep) {
        mkdirSync(keep, { recursive: true });
        writeFileSync(join(keep, `${name}.ndjson`), events.map((event) => JSON.stringify(event)).join('\n'));
      }
      // A failed run's VMs are gone with it: the last console lines of each node go with the failure message (a
      // flake in CI is then readable from the log).
      if (code !== 0) stderr += consoleTails(events);
      resolve({ code, events, stderr, steps });
    });
  });
}

/** The last 40 console lines of each node, as text. */
function consoleTails(events: Stamped[]): string {
  const lines = new Map<string, string[]>();
  for (const event of events) {
    if (event.kind !== 'vm.console') continue;
    const list = lines.get(event.node) ?? [];
    list.push(event.line);
    lines.set(event.node, list);
  }
  return [...lines]
    .map(([node, list]) => `\n--- ${node}: last console lines ---\n${list.slice(-40).join('\n')}\n`)
    .join('');
}

/**
 * The session of a scenario's run in this test process: unique per process, so that the same scenario run from
 * another checkout at the same time (on the same libvirtd) is never taken for a leftover of this one.
 */
export function session(name: string): string {
  return `test-engine-${process.pid.toString(36)}-${name}`.slice(0, 40).replace(/-+$/, '');
}

/** Domains of this test's session still defined in libvirt (must be none after a run). */
export function leftoverDomains(name: string): string[] {
  const out = execFileSync('virsh', ['-c', 'qemu:///system', 'list', '--all', '--name'], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((line) => line.trim())
    .filter((domain) => domain.startsWith(`devpivot-${session(name)}-`));
}

/** The events about one node, in bus order. */
export function eventsOf(events: Stamped[], node: string): Stamped[] {
  return events.filter((event) => 'node' in event && event.node === node);
}

/** One node's console lines, in order. */
export function consoleOf(events: Stamped[], node: string): string[] {
  return events.flatMap((event) => (event.kind === 'vm.console' && event.node === node ? [event.line] : []));
}

export function bootedVersions(events: Stamped[], node = 'node1'): string[] {
  return events.flatMap((event) => (event.kind === 'guest.booted' && event.node === node ? [event.version] : []));
}
