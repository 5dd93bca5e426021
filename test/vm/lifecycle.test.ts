import test from 'ava';
import { LifecycleEvent } from '../../src/vm/libvirt/connection.js';
import { guestReset } from '../../src/vm/libvirt/guest-resets.js';
import { LifecycleTranslator, REBOOT_MERGE_MS } from '../../src/vm/libvirt/lifecycle.js';

const clock = (start = 1_000_000) => {
  const c = { now: start, advance: (ms: number) => (c.now += ms) };
  return c;
};

test('the two REBOOT callbacks of one guest reboot become one vm.reboot; the next reboot is reported again', (t) => {
  const c = clock();
  const lifecycle = new LifecycleTranslator(() => c.now);
  t.deepEqual(lifecycle.reboot('node1', 'd1'), [{ kind: 'vm.reboot', node: 'node1', domain: 'd1' }]);
  c.advance(60);
  t.deepEqual(lifecycle.reboot('node1', 'd1'), [], 'the second REBOOT of the same reboot');
  c.advance(REBOOT_MERGE_MS + 1);
  t.is(lifecycle.reboot('node1', 'd1').length, 1, 'a later reboot');
});

test('reboots of different domains are not merged', (t) => {
  const c = clock();
  const lifecycle = new LifecycleTranslator(() => c.now);
  t.is(lifecycle.reboot('node1', 'd1').length, 1);
  t.is(lifecycle.reboot('node2', 'd2').length, 1);
});

test('a guest shutdown is the reason of the following stop', (t) => {
  const lifecycle = new LifecycleTranslator();
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.started, 0), [
    { kind: 'vm.started', node: 'n', domain: 'd' },
  ]);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.shutdown, 1), []);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 0), [
    { kind: 'vm.stopped', node: 'n', domain: 'd', reason: 'guest shut down' },
  ]);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 1), [
    { kind: 'vm.stopped', node: 'n', domain: 'd', reason: 'destroyed' },
  ]);
});

test('one vm.crashed per crash: a CRASHED event and its STOPPED(crashed) are not two crashes', (t) => {
  const lifecycle = new LifecycleTranslator();
  const kinds = (events: Array<{ kind: string }>) => events.map((event) => event.kind);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.crashed, 0), [
    { kind: 'vm.crashed', node: 'n', domain: 'd', reason: 'panicked' },
  ]);
  t.deepEqual(kinds(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 2)), ['vm.stopped']);
  // After a new start, a stop with reason "crashed" (no CRASHED event before it) is a crash of its own.
  lifecycle.lifecycle('n', 'd', LifecycleEvent.started, 0);
  t.deepEqual(kinds(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 2)), ['vm.crashed', 'vm.stopped']);
});

test('events that do not concern the run become nothing', (t) => {
  const lifecycle = new LifecycleTranslator();
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.suspended, 0), []);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.defined, 0), []);
});

test('a cold restart after a guest reboot: its destroy and start are neither a stop nor a start', (t) => {
  const lifecycle = new LifecycleTranslator();
  lifecycle.expectRestart('d', 'stop');
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 1), [], 'the restart destroyed it');
  lifecycle.expectRestart('d', 'start');
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.started, 0), [], 'and started it again');
  // Only the announced events are swallowed: the next power-off and start are reported.
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 1), [
    { kind: 'vm.stopped', node: 'n', domain: 'd', reason: 'destroyed' },
  ]);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.started, 0), [
    { kind: 'vm.started', node: 'n', domain: 'd' },
  ]);
});

test('a cold restart swallows only its own events: a crash, another domain, a cancelled call are reported', (t) => {
  const lifecycle = new LifecycleTranslator();
  lifecycle.expectRestart('d', 'stop');
  t.deepEqual(
    lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 2).map((e) => e.kind),
    ['vm.crashed', 'vm.stopped'],
    'a stop that is not a destroy is the guest crashing, not the restart',
  );
  t.is(lifecycle.lifecycle('m', 'other', LifecycleEvent.stopped, 1).length, 1, 'another domain');
  lifecycle.cancelRestart('d', 'stop');
  t.is(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 1).length, 1, 'the destroy failed: nothing to swallow');
  lifecycle.expectRestart('d', 'start');
  lifecycle.cancelRestart('d', 'start');
  t.is(lifecycle.lifecycle('n', 'd', LifecycleEvent.started, 0).length, 1);
});

test('a guest reset that QEMU turned into a stop is one vm.reboot, not a stop; a power-off stays a stop', (t) => {
  const lifecycle = new LifecycleTranslator();
  // As libvirt 9.0 delivers them for a live on_reboot `destroy` (recorded with `virsh event` and
  // `virsh qemu-monitor-event`): QEMU's SHUTDOWN {"guest":true,"reason":"guest-reset"}, then SHUTDOWN
  // "Finished after guest request" and STOPPED "Shutdown" — the same two as for a guest power-off.
  lifecycle.guestReset('d');
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.shutdown, 1), []);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 0), [
    { kind: 'vm.reboot', node: 'n', domain: 'd' },
  ]);
  // The restart's start is not reported; the next guest power-off (no reset before it) is a stop.
  lifecycle.expectRestart('d', 'start');
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.started, 0), []);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.shutdown, 1), []);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 0), [
    { kind: 'vm.stopped', node: 'n', domain: 'd', reason: 'guest shut down' },
  ]);
});

test('a reset followed by another kind of stop (destroyed meanwhile) is that stop; a start forgets the reset', (t) => {
  const lifecycle = new LifecycleTranslator();
  lifecycle.guestReset('d');
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 1), [
    { kind: 'vm.stopped', node: 'n', domain: 'd', reason: 'destroyed' },
  ]);
  t.deepEqual(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 0), [
    { kind: 'vm.stopped', node: 'n', domain: 'd', reason: 'shutdown' },
  ]);
  lifecycle.guestReset('d');
  lifecycle.lifecycle('n', 'd', LifecycleEvent.started, 0);
  t.is(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 0)[0]?.kind, 'vm.stopped');
  lifecycle.guestReset('other');
  t.is(lifecycle.lifecycle('n', 'd', LifecycleEvent.stopped, 0)[0]?.kind, 'vm.stopped', 'another domain reset');
});

test("QEMU's SHUTDOWN data: only the reason guest-reset is a reset", (t) => {
  t.true(guestReset('{"guest":true,"reason":"guest-reset"}'));
  t.false(guestReset('{"guest":true,"reason":"guest-shutdown"}'));
  t.false(guestReset('{"guest":false,"reason":"host-signal"}'));
  t.false(guestReset('{"guest":false,"reason":"host-qmp-system-reset"}'));
  t.false(guestReset(null));
  t.false(guestReset('not json'));
});
