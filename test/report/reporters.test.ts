import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';
import { type RunResult, runScenario } from '../../src/engine/engine.js';
import { createJsonReporter } from '../../src/report/json.js';
import { createJunitReporter, junitFormatters, mergeJunit, xmlEscape } from '../../src/report/junit.js';
import { createPlainReporter, plainFormatters } from '../../src/report/plain.js';
import type { Reporter } from '../../src/report/reporter.js';
import { parseScenario } from '../../src/scenario/parse.js';
import type { Scenario } from '../../src/scenario/types.js';
import { type FakeOptions, fakeDeps } from '../engine/fake.js';
import { tempDir } from '../helpers/temp.js';
import { parseXml, type XmlElement } from './xml.js';

/** A real engine run (fake VM host) with reporters attached as the CLI attaches them. */
async function runWith(
  text: string,
  reporters: Reporter[],
  fake: FakeOptions = {},
): Promise<{ result: RunResult; scenario: Scenario; events: Stamped[] }> {
  const bus = new EventBus();
  const scenario = parseScenario(text, '/tmp/report-test.yaml');
  const events: Stamped[] = [];
  bus.subscribe((event) => {
    events.push(event);
    for (const reporter of reporters) reporter.onEvent?.(event);
  });
  const result = await runScenario({
    scenario,
    deps: fakeDeps(fake).deps,
    bus,
    signal: new AbortController().signal,
    stateDir: tempDir('devpivot-test-state-'),
    cacheDir: '/tmp/devpivot-test-cache',
  });
  for (const reporter of reporters) await reporter.onEnd?.(result, scenario);
  return { result, scenario, events };
}

const PASSING = `name: good
nodes:
  node1: { pivot: fixture:2 }
steps:
  - up
  - expect: { booted: fixture:2, within: 3s }
  - assert: { booted: fixture:2 }
`;
const FAILING = `name: bad
nodes:
  node1: { pivot: fixture:2 }
  node2: {}
steps:
  - up
  - expect: { node: node1, event: failure, within: 2s }
  - assert: { node: node1, booted: fixture:1 }
`;

function collect(stream: PassThrough): () => string {
  let text = '';
  stream.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  return () => text;
}

test('--json: every event is one JSON line, in order, with its kind and time', async (t) => {
  const out = new PassThrough();
  const text = collect(out);
  const { events } = await runWith(PASSING, [createJsonReporter(out)]);
  const lines = text().trimEnd().split('\n');
  t.is(lines.length, events.length);
  const parsed = lines.map((line) => JSON.parse(line) as Stamped);
  t.deepEqual(parsed, JSON.parse(JSON.stringify(events)));
  t.is(parsed[0]!.kind, 'run.start');
  t.is(parsed.at(-1)!.kind, 'run.end');
  t.true(
    parsed.some((event) => event.kind === 'vm.console'),
    'console lines are included',
  );
});

test('plain: readable lines with elapsed time; on failure the console tail follows', async (t) => {
  const out = new PassThrough();
  const text = collect(out);
  await runWith(FAILING, [createPlainReporter(out)]);
  const output = text();
  t.regex(output, /^\[ +0\.0s\] scenario bad: nodes node1, node2$/m);
  t.regex(output, /\] ✓ prepare \(/);
  t.regex(output, /\] node1: booted version 1 \(111111111111, boot b1\)$/m);
  t.regex(output, /\] ✗ expect node1 failure within 2s \(2s\): node1 failure: not seen within 2s$/m);
  t.regex(output, /^--- last console lines of node1 ---$/m);
  t.regex(output, /^node1 \| devpivot-report: \{"event":"booted"/m);
  t.regex(output, /\] FAILED in /);
  t.notRegex(output, /registry\.request|vm\.console/);
});

function testcases(suite: XmlElement) {
  return suite.children.map((testcase) => ({
    classname: testcase.attributes.classname,
    name: testcase.attributes.name,
    outcome: testcase.children.find((child) => child.name !== 'system-out')?.name ?? 'passed',
  }));
}

test('JUnit: well-formed, a testcase per step and per node, failures and skips', async (t) => {
  const dir = tempDir('devpivot-junit-');
  const file = join(dir, 'out.xml');
  const good = createJunitReporter();
  const bad = createJunitReporter();
  await runWith(PASSING, [good]);
  await runWith(FAILING, [bad]);
  await mergeJunit(file, [good.document(), bad.document()]);
  const root = parseXml(await readFile(file, 'utf8'));
  t.is(root.name, 'testsuites');
  t.like(root.attributes, { tests: '11', failures: '1', skipped: '1' });
  const [first, second] = root.children;
  t.like(first!.attributes, { name: 'devpivot.good', tests: '5', failures: '0', skipped: '0' });
  t.deepEqual(testcases(first!), [
    { classname: 'devpivot.good.steps', name: '0. prepare', outcome: 'passed' },
    { classname: 'devpivot.good.steps', name: '1. up', outcome: 'passed' },
    { classname: 'devpivot.good.steps', name: '2. expect node1 booted fixture:2 within 3s', outcome: 'passed' },
    { classname: 'devpivot.good.steps', name: '3. assert node1 booted fixture:2', outcome: 'passed' },
    { classname: 'devpivot.good.nodes', name: 'node1', outcome: 'passed' },
  ]);
  t.deepEqual(testcases(second!), [
    { classname: 'devpivot.bad.steps', name: '0. prepare', outcome: 'passed' },
    { classname: 'devpivot.bad.steps', name: '1. up', outcome: 'passed' },
    { classname: 'devpivot.bad.steps', name: '2. expect node1 failure within 2s', outcome: 'failure' },
    { classname: 'devpivot.bad.steps', name: '3. assert node1 booted fixture:1', outcome: 'skipped' },
    { classname: 'devpivot.bad.nodes', name: 'node1', outcome: 'passed' },
    { classname: 'devpivot.bad.nodes', name: 'node2', outcome: 'passed' },
  ]);
  const failure = second!.children[2]!.children[0]!;
  t.is(failure.attributes.message, 'node1 failure: not seen within 2s');
  const out = first!.children[4]!.children[0]!;
  t.is(out.name, 'system-out');
  t.regex(out.text, /^boots: 1 \(111111111111\) -> 2 \(222222222222\)/);
  t.regex(out.text, /\| devpivot-report: \{"event":"booted","bootId":"b1"/, 'console lines, with quotes escaped');
});

test('JUnit: a node with an unexpected failure is a failed testcase', async (t) => {
  const junit = createJunitReporter();
  await runWith(
    `name: panic
nodes:
  node1: {}
steps:
  - up
  - wait: 1s
`,
    [junit],
    {
      onBoot: (node) => {
        setTimeout(() => node.say('Kernel panic - not syncing: <&>'), 10);
        return true;
      },
    },
  );
  const suite = parseXml(`<?xml version="1.0"?>${junit.document()}`);
  const node = suite.children.find((c) => c.attributes.name === 'node1')!;
  t.is(node.children[0]!.name, 'failure');
  t.is(node.children[0]!.attributes.message, 'kernel panic: Kernel panic - not syncing: <&>');
});

test('xmlEscape escapes markup and drops control characters', (t) => {
  t.is(xmlEscape(`a<b>&"'\x1b[0m\x07`), 'a&lt;b&gt;&amp;&quot;&apos;[0m');
});

test('the XML checker rejects what is not well-formed', (t) => {
  t.throws(() => parseXml('<?xml version="1.0"?><a><b></a>'));
  t.throws(() => parseXml('<?xml version="1.0"?><a>x & y</a>'));
  t.throws(() => parseXml('<?xml version="1.0"?><a x=1/>'));
  t.notThrows(() => parseXml('<?xml version="1.0"?><a x="&lt;"><b/>t &amp; u</a>'));
});

test("greenboot's verdicts in the reports: JUnit names the failed health check, plain says fallback, not FAILURE", (t) => {
  const health = {
    kind: 'guest.health',
    node: 'bad',
    ok: false,
    check: '10_failing_check.sh',
    line: '',
    at: 1,
  } as const;
  const fallback = { kind: 'guest.fallback', node: 'bad', tool: 'rpm-ostree', line: '', at: 2 } as const;
  t.deepEqual(junitFormatters['guest.health'](health), {
    node: 'bad',
    text: 'health check failed: 10_failing_check.sh',
  });
  t.deepEqual(junitFormatters['guest.fallback'](fallback), {
    node: 'bad',
    text: 'fallback: rpm-ostree rollback to the previous deployment',
  });
  t.is(
    plainFormatters['guest.health'](health),
    'bad: health check 10_failing_check.sh failed (greenboot: the boot is red)',
  );
  t.is(
    plainFormatters['guest.fallback'](fallback),
    'bad: fell back to the previous deployment (greenboot ran rpm-ostree rollback)',
  );
});

test("JUnit keeps greenboot's verdicts in the node's output however long its console is", async (t) => {
  const junit = createJunitReporter();
  junit.onEvent?.({ kind: 'guest.health', node: 'node1', ok: false, check: '10_failing_check.sh', line: '', at: 1 });
  junit.onEvent?.({ kind: 'guest.fallback', node: 'node1', tool: 'rpm-ostree', line: '', at: 2 });
  for (let i = 0; i < 1000; i++) junit.onEvent?.({ kind: 'vm.console', node: 'node1', line: `line ${i}`, at: 3 + i });
  await runWith(PASSING, [junit]);
  const document = junit.document();
  t.regex(
    document,
    /health check failed: 10_failing_check\.sh\nfallback: rpm-ostree rollback to the previous deployment/,
  );
  t.notRegex(document, /\| line 0\b/);
});
