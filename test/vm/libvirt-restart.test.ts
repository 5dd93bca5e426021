/**
 * LibvirtNode's restart after a guest reboot, against a fake connection: the calls it makes and the events it
 * reports. (The real path runs in every VM test with a reboot; the race this covers cannot be forced there.)
 */
import { join } from 'node:path';
import test from 'ava';
import type { DevpivotEvent } from '../../src/core/events.js';
import { LifecycleAction, LifecycleType } from '../../src/vm/libvirt/connection.js';
import { LifecycleTranslator } from '../../src/vm/libvirt/lifecycle.js';
import { LibvirtNode, RESTART_SETTLE_MS } from '../../src/vm/libvirt/node.js';
import { tempDir } from '../helpers/temp.js';

function fakeNode(options: { guestResets?: boolean; startGate?: Promise<void> } = {}) {
  const calls: string[] = [];
  const events: DevpivotEvent[] = [];
  let active = true;
  const domain = {
    isActive: async () => active,
    destroy: async () => {
      calls.push('destroy');
      active = false;
    },
    startPaused: async () => {
      await options.startGate;
      calls.push('start');
      active = true;
    },
    resume: async () => {
      calls.push('resume');
    },
    setLiveLifecycleAction: async (type: number, action: number) => {
      calls.push(
        `on_reboot ${type === LifecycleType.reboot && action === LifecycleAction.destroy ? 'destroy' : action === LifecycleAction.restart ? 'restart' : '?'}`,
      );
    },
    metadata: async () => undefined,
    setMetadata: async () => {},
    // the console cannot attach here: the node warns and carries on
    openConsole: async () => {
      throw new Error('no console in this test');
    },
    free: () => {},
  };
  const lifecycle = new LifecycleTranslator();
  const connection = { lookupDomain: async () => domain, newStream: () => ({ free: () => {}, close: async () => {} }) };
  const host = {
    uri: 'test:///fake',
    get connection() {
      return connection as never;
    },
    emit: (event: DevpivotEvent) => events.push(event),
    warn: () => {},
    forget: () => {},
    lifecycle,
    guestResets: options.guestResets ?? false,
  };
  const node = new LibvirtNode(host, 'node1', 'd1', join(tempDir('devpivot-restart-test-'), 'console.log'));
  return { node, calls, events, lifecycle };
}

test('QEMU ending (failed) right after a restart is the same reboot: started again, no stop reported; later it is a stop', async (t) => {
  const { node, calls, events } = fakeNode();
  t.false(node.restartFailedSoon(), 'no restart yet: a failed QEMU is a stop');
  await node.restartAfterReboot();
  t.deepEqual(calls, ['destroy', 'start', 'resume']);
  t.true(node.restartFailedSoon(), 'within the settle time of the restart');
  await node.restartAfterReboot(); // queued behind the start again: wait for it (the domain is active: a new restart)
  t.deepEqual(calls.slice(0, 4), ['destroy', 'start', 'resume', 'start'], 'started again without a destroy first');
  t.deepEqual(
    events.filter((e) => e.kind === 'vm.stopped' || e.kind === 'vm.crashed'),
    [],
    'nothing reported as a stop or a crash',
  );
  t.false(node.restartFailedSoon(Date.now() + RESTART_SETTLE_MS + 1), 'after the settle time it is a stop');
  node.console.detach();
});

test('the starts of one restart are limited: the third failure soon after is reported', async (t) => {
  const { node, calls } = fakeNode();
  await node.restartAfterReboot();
  t.true(node.restartFailedSoon());
  t.true(node.restartFailedSoon());
  t.false(node.restartFailedSoon(), 'three starts in all');
  await node.restartAfterReboot();
  t.is(calls.filter((c) => c === 'start').length, 4, 'three for the first restart, one for the new one');
  node.console.detach();
});

test('where QEMU stops at a guest reset: each start sets on_reboot destroy before the CPU runs; after the reset the node is only started; letting go restores restart', async (t) => {
  const { node, calls, events } = fakeNode({ guestResets: true });
  await node.start();
  t.deepEqual(calls, ['start', 'on_reboot destroy', 'resume'], 'set while the new domain is still paused');
  calls.length = 0;
  await node.startAfterReset();
  t.deepEqual(calls, ['start', 'on_reboot destroy', 'resume'], 'no destroy: QEMU is gone already');
  t.true(node.restartFailedSoon(), 'a QEMU failing right after this start is the same reboot');
  await node.releaseReboots();
  t.is(calls.at(-1), 'on_reboot restart');
  t.deepEqual(
    events.filter((e) => e.kind === 'vm.stopped' || e.kind === 'vm.crashed'),
    [],
  );
  node.console.detach();
});

test('a node being removed is not started again by a reboot; removing() waits for a start under way', async (t) => {
  let open = () => {};
  const startGate = new Promise<void>((resolve) => (open = resolve));
  const { node, calls, events } = fakeNode({ guestResets: true, startGate });
  const underWay = node.startAfterReset();
  await new Promise((resolve) => setImmediate(resolve)); // the start has begun: it waits in startPaused
  let removed = false;
  const removal = node.removing().then(() => (removed = true));
  const queued = node.startAfterReset(); // a reboot reported after the removal began
  await new Promise((resolve) => setImmediate(resolve));
  t.false(removed, 'removing() waits while the start is under way');
  open();
  await Promise.all([underWay, removal, queued]);
  t.deepEqual(
    calls,
    ['start', 'on_reboot destroy', 'resume'],
    'the start under way finished; the later one did not run',
  );
  await node.restartAfterReboot();
  t.false(node.restartFailedSoon(), 'a QEMU ending now is a stop');
  t.deepEqual(calls, ['start', 'on_reboot destroy', 'resume'], 'nothing started after the removal began');
  t.deepEqual(events, []);
  node.console.detach();
});
