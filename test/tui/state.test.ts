import test from 'ava';
import type { DevpivotEvent, Stamped } from '../../src/core/events.js';
import { parseScenario } from '../../src/scenario/parse.js';
import { healthText } from '../../src/tui/app.js';
import { initialView, reduce, type ViewState } from '../../src/tui/state.js';

const scenario = parseScenario('nodes:\n  a: { pivot: fixture:2 }\n  b: {}\n', '/tmp/two.yaml');
let clock = 1000;
const at = (event: DevpivotEvent): Stamped => {
  clock += 100;
  return { ...event, at: clock };
};
const fold = (events: DevpivotEvent[], state: ViewState = initialView(scenario)) =>
  events.reduce((current, event) => reduce(current, { type: 'event', event: at(event) }), state);

test('initial view: steps from the scenario (prepare first), nodes with their targets', (t) => {
  const view = initialView(scenario);
  t.deepEqual(
    view.steps.map((s) => `${s.status} ${s.name}`),
    [
      'pending prepare',
      'pending up',
      'pending expect a booted fixture:2 within 10m',
      'pending assert a booted fixture:2',
      'pending expect b booted within 5m',
    ],
  );
  t.like(view.nodes[0], { name: 'a', target: 'fixture:2', phase: 'waiting', boots: 0 });
  t.is(view.nodes[1]!.target, undefined);
});

test('a pivot folds into phases, versions, reboots and progress', (t) => {
  const view = fold([
    { kind: 'run.start', scenario: 'two', nodes: ['a', 'b'] },
    { kind: 'registry.listening', url: 'http://127.0.0.1:5000', storage: '/s' },
    { kind: 'step.start', index: 0, name: 'prepare' },
    { kind: 'image.pushed', ref: 'r@sha256:x', digest: 'sha256:x' },
    { kind: 'step.pass', index: 0, name: 'prepare', ms: 1200 },
    { kind: 'vm.defined', node: 'a', domain: 'd' },
    { kind: 'vm.started', node: 'a', domain: 'd' },
    { kind: 'guest.ignition', node: 'a', ok: true },
    { kind: 'guest.booted', node: 'a', bootId: 'b1', version: '1', commit: 'c1' },
    { kind: 'guest.pivot', node: 'a', phase: 'pulling', target: 'x' },
    {
      kind: 'blob.progress',
      repository: 'r',
      digest: 'sha256:l',
      sent: 10,
      total: 40,
      client: '127.0.0.1:1',
      node: 'a',
    },
  ]);
  t.is(view.registryUrl, 'http://127.0.0.1:5000');
  t.is(view.activity, undefined, 'set-up activity ends with prepare');
  t.like(view.steps[0], { status: 'passed', ms: 1200 });
  t.like(view.nodes[0], { phase: 'pulling', from: '1', current: '1', boots: 1, progress: { sent: 10, total: 40 } });
  t.is(view.nodes[1]!.progress, undefined, 'b does not pull');
  const after = fold(
    [
      { kind: 'guest.pivot', node: 'a', phase: 'staged', target: 'x' },
      { kind: 'vm.reboot', node: 'a', domain: 'd' },
      { kind: 'guest.booted', node: 'a', bootId: 'b2', version: '2', commit: 'c2' },
      { kind: 'step.fail', index: 1, name: 'up', ms: 5, error: 'boom' },
      { kind: 'run.end', ok: false, ms: 9000 },
    ],
    view,
  );
  t.like(after.nodes[0], { phase: 'booted', from: '1', current: '2', boots: 2, progress: { sent: 40, total: 40 } });
  t.like(after.steps[1], { status: 'failed', error: 'boom' });
  t.deepEqual(after.done, { ok: false, ms: 9000 });
});

test('a reboot counts on vm.reboot; the next boot shows as booting once its console prints', (t) => {
  const staged = fold([
    { kind: 'vm.started', node: 'a', domain: 'd' },
    { kind: 'guest.booted', node: 'a', bootId: 'b1', version: '1', commit: 'c1' },
    { kind: 'guest.pivot', node: 'a', phase: 'staged', target: 'x' },
    { kind: 'vm.reboot', node: 'a', domain: 'd' },
  ]);
  t.like(staged.nodes[0], { phase: 'rebooting', reboots: 1, boots: 1 }, 'counted before the new boot reports');
  const printing = fold([{ kind: 'vm.console', node: 'a', line: 'Linux version 6.1.0' }], staged);
  t.like(printing.nodes[0], { phase: 'booting', reboots: 1 });
  const booted = fold(
    [
      { kind: 'guest.booted', node: 'a', bootId: 'b2', version: '2', commit: 'c2' },
      { kind: 'vm.console', node: 'a', line: 'login:' },
    ],
    printing,
  );
  t.like(booted.nodes[0], { phase: 'booted', reboots: 1, boots: 2 }, 'a booted node stays booted as it prints');
  const restarted = fold(
    [
      { kind: 'vm.stopped', node: 'a', domain: 'd', reason: 'destroyed' },
      { kind: 'vm.started', node: 'a', domain: 'd' },
    ],
    booted,
  );
  t.like(restarted.nodes[0], { phase: 'booting', reboots: 2 }, 'a restart after a power loss counts too');
});

test('set-up activity goes when its step passes or a node starts booting (a disk upload at 100%)', (t) => {
  const uploading = fold([
    { kind: 'step.pass', index: 0, name: 'prepare', ms: 1 },
    { kind: 'step.start', index: 1, name: 'up' },
    { kind: 'image.progress', ref: 'node1.qcow2', phase: 'upload', done: 100, total: 100 },
  ]);
  t.is(uploading.activity, 'upload node1.qcow2 100%');
  t.is(fold([{ kind: 'vm.started', node: 'a', domain: 'd' }], uploading).activity, undefined);
  t.is(fold([{ kind: 'step.pass', index: 1, name: 'up', ms: 1 }], uploading).activity, undefined);
});

test('failures, console tail, selection and keys', (t) => {
  let view = fold([
    ...Array.from({ length: 20 }, (_, i): DevpivotEvent => ({ kind: 'vm.console', node: 'b', line: `line ${i}` })),
    { kind: 'guest.failure', node: 'b', reason: 'kernel panic: x', line: 'x' },
    { kind: 'vm.console', node: 'nobody', line: 'ignored' },
  ]);
  t.is(view.nodes[1]!.console.length, 12);
  t.is(view.nodes[1]!.console.at(-1), 'line 19');
  t.like(view.nodes[1], { phase: 'failed', failure: 'kernel panic: x' });
  view = reduce(view, { type: 'select', delta: 1 });
  t.is(view.selected, 1);
  view = reduce(view, { type: 'select', delta: 1 });
  t.is(view.selected, 0, 'wraps around');
  view = reduce(view, { type: 'select', delta: -1 });
  t.is(view.selected, 1);
  view = reduce(view, { type: 'toggle-console' });
  t.false(view.showConsole);
  view = reduce(view, { type: 'quit', keep: true });
  t.is(view.quitting, 'keep');
});

test("each node's bar shows its own pull: interleaved blob.progress of two nodes; the main port credits nobody", (t) => {
  const two = parseScenario('nodes:\n  a: { pivot: fixture:2 }\n  b: { pivot: fixture:2 }\n', '/tmp/two.yaml');
  const progress = (node: string | undefined, digest: string, sent: number, total: number): DevpivotEvent => ({
    kind: 'blob.progress',
    repository: 'devpivot/fixture-2',
    digest,
    sent,
    total,
    client: '127.0.0.1:40000',
    ...(node ? { node } : {}),
  });
  const view = fold(
    [
      { kind: 'guest.pivot', node: 'a', phase: 'pulling', target: 'x' },
      { kind: 'guest.pivot', node: 'b', phase: 'pulling', target: 'x' },
      progress('a', 'sha256:layer', 300, 1000),
      progress('b', 'sha256:layer', 100, 1000),
      progress('a', 'sha256:layer', 900, 1000),
      progress('b', 'sha256:config', 50, 50),
      progress(undefined, 'sha256:layer', 1000, 1000),
    ],
    initialView(two),
  );
  t.deepEqual(view.nodes[0]!.progress, { sent: 900, total: 1000 }, "a: its own bytes, not b's");
  t.deepEqual(view.nodes[1]!.progress, { sent: 100, total: 1000 }, "b: its largest blob, not a's, not the main port's");
  const unknown = fold([progress('nobody', 'sha256:layer', 5, 10)], initialView(two));
  t.deepEqual(
    unknown.nodes.map((node) => node.progress),
    [undefined, undefined],
  );
});

test('a node whose pull has sent its largest blob in full shows importing until the guest reports staging', (t) => {
  const blob = (sent: number, total: number): DevpivotEvent => ({
    kind: 'blob.progress',
    repository: 'r',
    digest: 'sha256:l',
    sent,
    total,
    client: '127.0.0.1:1',
    node: 'a',
  });
  const pulling = fold([
    { kind: 'guest.booted', node: 'a', bootId: 'b1', version: '1', commit: 'c1' },
    { kind: 'guest.pivot', node: 'a', phase: 'pulling', target: 'x' },
    blob(30, 40),
  ]);
  t.is(pulling.nodes[0]!.phase, 'pulling');
  const importing = fold([blob(40, 40)], pulling);
  t.like(importing.nodes[0], { phase: 'importing', progress: { sent: 40, total: 40 } });
  t.is(fold([blob(1, 2)], importing).nodes[0]!.phase, 'importing', 'a small blob after it does not undo it');
  t.is(fold([{ kind: 'guest.pivot', node: 'a', phase: 'staging', target: 'x' }], importing).nodes[0]!.phase, 'staging');
});

test('a fallback shows as what it is: the node back on its old version, the failed check named, no failure', (t) => {
  const booted = (version: string): DevpivotEvent => ({
    kind: 'guest.booted',
    node: 'a',
    bootId: version,
    version,
    commit: version.repeat(8),
  });
  const reboot: DevpivotEvent = { kind: 'vm.reboot', node: 'a', domain: 'd' };
  const red: DevpivotEvent = { kind: 'guest.health', node: 'a', ok: false, check: '10_failing_check.sh', line: '' };
  const redView = fold([booted('1'), reboot, booted('2'), red]);
  t.like(redView.nodes[0], { phase: 'health check failed', failure: undefined, current: '2' });
  t.regex(healthText(redView.nodes[0]!), /^health check 10_failing_check\.sh failed: GRUB boots it again/);
  const view = fold(
    [
      reboot,
      booted('2'),
      red,
      reboot,
      booted('1'),
      { kind: 'guest.fallback', node: 'a', tool: 'rpm-ostree', line: '' },
      { kind: 'guest.health', node: 'a', ok: true, line: '' },
    ],
    redView,
  );
  t.like(view.nodes[0], { phase: 'fell back', current: '1', failure: undefined, reboots: 3 });
  t.is(
    healthText(view.nodes[0]!),
    'fell back to 1: health check 10_failing_check.sh failed (greenboot ran rpm-ostree rollback)',
  );
});
