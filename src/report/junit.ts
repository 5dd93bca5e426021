import { writeFile } from 'node:fs/promises';
import type { EventFormatters, Stamped } from '../core/events.js';
import type { RunResult } from '../engine/engine.js';
import type { Scenario } from '../scenario/types.js';
import { printable, type Reporter } from './reporter.js';

/** What the JUnit report keeps from an event: a line of a node's output, or nothing. */
type Note = { node: string; text: string } | null;
const none = (): Note => null;

/** Per node, the lines that go to its testcase's <system-out>: what the guest did, and its console tail. */
export const junitFormatters: EventFormatters<Note> = {
  log: none,
  'registry.listening': none,
  'registry.request': none,
  'registry.stopped': none,
  'registry.upstream': none,
  'blob.progress': none,
  'image.progress': none,
  'image.built': none,
  'image.pushed': none,
  'image.pulled': none,
  'vm.defined': (e) => ({ node: e.node, text: `defined ${e.domain}` }),
  'vm.started': (e) => ({ node: e.node, text: 'started' }),
  'vm.console': (e) => ({ node: e.node, text: `| ${e.line}` }),
  'vm.reboot': (e) => ({ node: e.node, text: 'reboot' }),
  'vm.stopped': (e) => ({ node: e.node, text: `stopped (${e.reason})` }),
  'vm.crashed': (e) => ({ node: e.node, text: `crashed (${e.reason})` }),
  'guest.ignition': (e) => ({ node: e.node, text: `ignition ok=${e.ok}` }),
  'guest.pivot': (e) => ({ node: e.node, text: `pivot ${e.phase} ${e.target}` }),
  'guest.pivot.skipped': (e) => ({ node: e.node, text: `pivot skipped: ${e.reason}` }),
  'guest.booted': (e) => ({ node: e.node, text: `booted version ${e.version} commit ${e.commit}` }),
  'guest.health': (e) => ({
    node: e.node,
    text: e.ok ? 'health checks passed' : `health check failed: ${e.check ?? '(not named on the console)'}`,
  }),
  'guest.fallback': (e) => ({ node: e.node, text: `fallback: ${e.tool} rollback to the previous deployment` }),
  'guest.failure': (e) => ({ node: e.node, text: `FAILURE: ${e.reason}` }),
  'guest.progress': none,
  'run.start': none,
  'step.start': none,
  'step.pass': none,
  'step.fail': none,
  'run.end': none,
};

/** Lines of node output kept per node (the console is in its log file too). */
const OUTPUT_LINES = 400;

export function xmlEscape(text: string): string {
  return printable(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);

/**
 * A scenario run as a JUnit <testsuite>: a testcase per step (prepare first) and one per node. The suite's `file`
 * is the scenario file as given, its `time` the run's: `--shard-timings` reads them back (junit-timings.ts).
 */
export function renderJunit(
  scenario: Scenario,
  result: RunResult,
  output: Map<string, string[]> = new Map(),
  verdicts: Map<string, string[]> = new Map(),
): string {
  const suite = `devpivot.${scenario.name}`;
  const cases: string[] = [];
  let failures = 0;
  let skipped = 0;
  for (const step of result.steps) {
    const open = `    <testcase classname="${xmlEscape(`${suite}.steps`)}" name="${xmlEscape(`${step.index}. ${step.name}`)}" time="${seconds(step.ms)}"`;
    if (step.status === 'passed') cases.push(`${open}/>`);
    else if (step.status === 'skipped') {
      skipped++;
      cases.push(`${open}>\n      <skipped message="not run: an earlier step failed"/>\n    </testcase>`);
    } else {
      failures++;
      const message = step.error ?? 'failed';
      cases.push(
        `${open}>\n      <failure message="${xmlEscape(message)}">${xmlEscape(message)}</failure>\n    </testcase>`,
      );
    }
  }
  for (const node of result.nodes) {
    const unexpected = node.failures.filter((failure) => !failure.expected);
    const lines = [
      `boots: ${node.boots.map((boot) => `${boot.version} (${boot.commit.slice(0, 12)})`).join(' -> ') || 'none'}`,
      // greenboot's verdicts stay whole: the console tail below would push them out
      ...(verdicts.get(node.name) ?? []),
      ...(node.consoleLog ? [`console log: ${node.consoleLog}`] : []),
      ...(output.get(node.name) ?? []),
    ];
    const open = `    <testcase classname="${xmlEscape(`${suite}.nodes`)}" name="${xmlEscape(node.name)}" time="${seconds(result.ms)}">`;
    const out = `      <system-out>${xmlEscape(lines.join('\n'))}</system-out>`;
    if (unexpected.length > 0) {
      failures++;
      const message = unexpected.map((failure) => failure.reason).join('; ');
      cases.push(
        `${open}\n      <failure message="${xmlEscape(message)}">${xmlEscape(message)}</failure>\n${out}\n    </testcase>`,
      );
    } else if (node.boots.length === 0 && !result.ok) {
      skipped++;
      cases.push(`${open}\n      <skipped message="the node never reported a boot"/>\n${out}\n    </testcase>`);
    } else {
      cases.push(`${open}\n${out}\n    </testcase>`);
    }
  }
  const tests = result.steps.length + result.nodes.length;
  return [
    `  <testsuite name="${xmlEscape(suite)}" file="${xmlEscape(scenario.file)}" tests="${tests}" failures="${failures}" errors="0" skipped="${skipped}" time="${seconds(result.ms)}">`,
    ...cases,
    '  </testsuite>',
  ].join('\n');
}

/**
 * A JUnit document from testsuite elements (one per scenario run), with the totals on <testsuites>, named `name`
 * (`devpivot`, or `devpivot shard 1/2` for a shard: the testsuites keep their names whichever shard runs them).
 */
export function junitDocument(suites: string[], name = 'devpivot'): string {
  const total = (attribute: string) =>
    suites.reduce((sum, suite) => sum + Number(new RegExp(` ${attribute}="([0-9.]+)"`).exec(suite)?.[1] ?? 0), 0);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xmlEscape(name)}" tests="${total('tests')}" failures="${total('failures')}" errors="0" skipped="${total('skipped')}" time="${total('time').toFixed(3)}">`,
    ...suites,
    '</testsuites>',
    '',
  ].join('\n');
}

/** Write the JUnit file for every scenario of the command (none: an empty report, `tests="0"`). */
export async function mergeJunit(file: string, suites: string[], name?: string): Promise<void> {
  await writeFile(file, junitDocument(suites, name));
}

/** `--junit FILE`: collects node output while the run goes; `document()` is this run's <testsuite>. */
export function createJunitReporter(): Reporter & { document(): string } {
  const output = new Map<string, string[]>();
  const verdicts = new Map<string, string[]>();
  let suite = '';
  return {
    onEvent(event: Stamped) {
      const note = (junitFormatters[event.kind] as (event: Stamped) => Note)(event);
      if (!note) return;
      if ((event.kind === 'guest.health' && !event.ok) || event.kind === 'guest.fallback')
        verdicts.set(note.node, [...(verdicts.get(note.node) ?? []), note.text]);
      const lines = output.get(note.node) ?? [];
      lines.push(note.text);
      if (lines.length > OUTPUT_LINES) lines.shift();
      output.set(note.node, lines);
    },
    onEnd(result, scenario) {
      suite = renderJunit(scenario, result, output, verdicts);
    },
    document: () => suite,
  };
}
