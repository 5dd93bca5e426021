import test from 'ava';
import { render } from 'ink-testing-library';
import { EventBus } from '../../src/core/bus.js';
import type { DevpivotEvent } from '../../src/core/events.js';
import { parseScenario } from '../../src/scenario/parse.js';
import { App, displayLine } from '../../src/tui/app.js';

const scenario = parseScenario('name: demo\nnodes:\n  node1: { pivot: fixture:2 }\n  node2: {}\n', '/tmp/demo.yaml');
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

/** Resolves once `condition` holds (or after 2 s): key handling is asynchronous and slower on a loaded machine. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !condition(); i++) await settle();
}

/** The latest frame once it matches (renders are asynchronous), or the latest frame after 2 s. */
async function frameMatching(view: { lastFrame(): string | undefined }, pattern: RegExp): Promise<string> {
  for (let i = 0; i < 100 && !pattern.test(view.lastFrame() ?? ''); i++) await settle();
  return view.lastFrame() ?? '';
}

async function setup() {
  let t0 = 1_000_000;
  const bus = new EventBus({ now: () => t0 });
  const quits: boolean[] = [];
  const view = render(
    <App bus={bus} scenario={scenario} onQuit={(keep) => quits.push(keep)} now={() => t0} tickMs={0} />,
  );
  const emit = async (...events: DevpivotEvent[]) => {
    for (const event of events) {
      t0 += 1000;
      bus.emit(event);
    }
    await settle();
  };
  await settle(); // effects (bus subscription, input) attach after the first render
  return { view, emit, quits };
}

test('header, node rows, running step and console pane', async (t) => {
  const { view, emit } = await setup();
  await emit(
    { kind: 'run.start', scenario: 'demo', nodes: ['node1', 'node2'] },
    { kind: 'registry.listening', url: 'http://127.0.0.1:5555', storage: '/s' },
    { kind: 'step.start', index: 0, name: 'prepare' },
    { kind: 'step.pass', index: 0, name: 'prepare', ms: 2000 },
    { kind: 'step.start', index: 1, name: 'up' },
    { kind: 'vm.started', node: 'node1', domain: 'd1' },
    { kind: 'vm.console', node: 'node1', line: 'fixture-init: booted Fixture CoreOS 1' },
    { kind: 'guest.booted', node: 'node1', bootId: 'b', version: '1', commit: 'c' },
    { kind: 'guest.pivot', node: 'node1', phase: 'pulling', target: 't' },
    { kind: 'guest.pivot', node: 'node2', phase: 'pulling', target: 't' },
    { kind: 'blob.progress', repository: 'r', digest: 'sha256:x', sent: 25, total: 100, client: 'c', node: 'node1' },
    { kind: 'blob.progress', repository: 'r', digest: 'sha256:x', sent: 60, total: 100, client: 'd', node: 'node2' },
  );
  const frame = await frameMatching(view, /60%/);
  t.regex(frame, /devpivot · scenario demo · registry http:\/\/127\.0\.0\.1:5555 · 0:11/);
  t.regex(frame, /✓ prepare \(2s\)/);
  t.regex(frame, /up\n/);
  t.regex(frame, /› node1 +\S pulling +1 → fixture:2 +\[█████░+\] 25% {2}reboots 0 {2}0:06/);
  t.regex(frame, /node2 +\S pulling +\? → — +\[█{12}░+\] 60%/, "node2's own bar");
  t.regex(frame, /console · node1/);
  t.regex(frame, /fixture-init: booted Fixture CoreOS 1/);
  t.regex(frame, /q quit \(clean up\) · k quit, keep VMs/);
  view.unmount();
});

test("a bootc node's row shows the guest's own layers and bytes next to the registry's bar, then its steps", async (t) => {
  const { view, emit } = await setup();
  const mib = 1024 * 1024;
  await emit(
    { kind: 'vm.started', node: 'node1', domain: 'd1' },
    { kind: 'guest.booted', node: 'node1', bootId: 'b', version: '1', commit: 'c' },
    { kind: 'guest.pivot', node: 'node1', phase: 'pulling', target: 't' },
    { kind: 'blob.progress', repository: 'r', digest: 'sha256:x', sent: 50, total: 100, client: 'c', node: 'node1' },
    {
      kind: 'guest.progress',
      node: 'node1',
      tool: 'bootc',
      task: 'pulling',
      steps: 0,
      stepsTotal: 1,
      bytes: 30 * mib,
      bytesTotal: 60 * mib,
      partial: true,
    },
  );
  t.regex(
    await frameMatching(view, /guest/),
    /node1 +\S pulling .*\] 50% {2}reboots 0 .*\n {4}guest: pulling 0\/1 layers · 30\.0\/60\.0 MiB\n/,
  );
  await emit({ kind: 'guest.progress', node: 'node1', tool: 'bootc', task: 'staging', steps: 2, stepsTotal: 3 });
  t.regex(await frameMatching(view, /guest staging/), /node1 +\S staging .*reboots 0.*\n {4}guest: staging 2\/3\n/);
  view.unmount();
});

test('the target keeps its scenario name through the pivot; importing replaces a full bar', async (t) => {
  const { view, emit } = await setup();
  const before = await frameMatching(view, /node1/);
  t.regex(before, /node1 +\S? ?waiting +\? → fixture:2/);
  await emit(
    { kind: 'vm.started', node: 'node1', domain: 'd1' },
    { kind: 'guest.booted', node: 'node1', bootId: 'b', version: '1', commit: 'c' },
    { kind: 'guest.pivot', node: 'node1', phase: 'pulling', target: 't' },
    { kind: 'blob.progress', repository: 'r', digest: 'sha256:x', sent: 100, total: 100, client: 'c', node: 'node1' },
  );
  const importing = await frameMatching(view, /importing/);
  t.regex(importing, /node1 +\S importing +1 → fixture:2 +reboots 0/);
  t.notRegex(importing, /100%/);
  await emit(
    { kind: 'vm.reboot', node: 'node1', domain: 'd1' },
    { kind: 'guest.booted', node: 'node1', bootId: 'b2', version: '2', commit: 'd' },
  );
  t.regex(await frameMatching(view, /at 2/), /node1 +\S booted +1 → fixture:2 \(at 2\)/);
  view.unmount();
});

test('keys: Tab selects the next node, c hides the console, k quits keeping the VMs', async (t) => {
  const { view, emit, quits } = await setup();
  await emit({ kind: 'vm.console', node: 'node2', line: 'hello from node2' });
  view.stdin.write('\t');
  t.regex(await frameMatching(view, /› node2/), /› node2/);
  t.regex(view.lastFrame()!, /console · node2[\s\S]*hello from node2/);
  view.stdin.write('c');
  t.notRegex(await frameMatching(view, /^(?![\s\S]*console · node)/), /console · node/);
  view.stdin.write('k');
  t.regex(await frameMatching(view, /stopping, keeping the VMs/), /stopping, keeping the VMs/);
  await until(() => quits.length > 0);
  t.deepEqual(quits, [true]);
  view.stdin.write('q');
  await settle();
  t.deepEqual(quits, [true], 'one quit only');
  view.unmount();
});

test('q quits with cleanup', async (t) => {
  const { view, quits } = await setup();
  await settle();
  view.stdin.write('q');
  t.regex(await frameMatching(view, /stopping and cleaning up/), /stopping and cleaning up/);
  await until(() => quits.length > 0);
  t.deepEqual(quits, [false]);
  view.unmount();
});

test('a failed run ends with the summary: failed steps with their errors and each node', async (t) => {
  const { view, emit } = await setup();
  await emit(
    { kind: 'run.start', scenario: 'demo', nodes: ['node1', 'node2'] },
    { kind: 'step.start', index: 0, name: 'prepare' },
    { kind: 'step.pass', index: 0, name: 'prepare', ms: 10 },
    { kind: 'step.start', index: 1, name: 'up' },
    { kind: 'guest.booted', node: 'node1', bootId: 'b', version: '1', commit: 'c' },
    { kind: 'guest.failure', node: 'node1', reason: 'kernel panic: Kernel panic - not syncing', line: '' },
    { kind: 'step.fail', index: 1, name: 'up', ms: 3000, error: 'node node1 failed: kernel panic' },
    { kind: 'run.end', ok: false, ms: 7000 },
  );
  const frame = await frameMatching(view, /FAILED/);
  t.regex(frame, /✗ up \(3s\): node node1 failed: kernel panic/);
  t.regex(frame, /FAILED in 7s · 1\/5 steps/);
  t.regex(frame, / {2}node1: 1 → 1 \(0 reboot\(s\)\)/);
  t.regex(frame, /node1 +✗ failed/);
  t.notRegex(frame, /q quit/);
  view.unmount();
});

test('console lines are shown with tabs expanded to tab stops and control characters removed', (t) => {
  // '[    0.18] rcu: ' is 16 columns: the tab moves to column 24.
  t.is(displayLine('[    0.18] rcu: \tRCU restricting'), `[    0.18] rcu: ${' '.repeat(8)}RCU restricting`);
  t.is(displayLine('\tx'), '        x');
  t.is(displayLine('a\x07b\x1bc\rd'), 'abcd');
});

test('a kernel line with a tab does not leave stale frames: every frame has the same height', async (t) => {
  const { view, emit } = await setup();
  await emit({ kind: 'run.start', scenario: 'demo', nodes: ['node1', 'node2'] });
  const before = view.lastFrame()!.split('\n').length;
  await emit({
    kind: 'vm.console',
    node: 'node1',
    line: `[    0.183104] \t${'Trampoline variant of Tasks RCU enabled. '.repeat(2)}`,
  });
  const frame = await frameMatching(view, /Trampoline/); // Ink throttles renders: wait for the line's frame
  t.false(frame.includes('\t'));
  t.regex(frame, /\[ {4}0\.183104\] {2}Trampoline/); // 15 columns, then the tab stop at 16
  t.is(frame.split('\n').length, before, 'the line takes the place of "(no output yet)" and does not wrap');
});
