import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';

test('subscribers get stamped events in order; the disposer unsubscribes', (t) => {
  const bus = new EventBus({ now: () => 42 });
  const seen: Stamped[] = [];
  const dispose = bus.subscribe((event) => seen.push(event));
  bus.emit({ kind: 'vm.console', node: 'a', line: 'hello' });
  dispose();
  bus.emit({ kind: 'vm.console', node: 'a', line: 'unseen' });
  t.deepEqual(seen, [{ kind: 'vm.console', node: 'a', line: 'hello', at: 42 }]);
});

test('on(kind) delivers only that kind, typed', (t) => {
  const bus = new EventBus();
  const lines: string[] = [];
  bus.on('vm.console', (event) => lines.push(event.line));
  bus.emit({ kind: 'vm.reboot', node: 'a', domain: 'd' });
  bus.emit({ kind: 'vm.console', node: 'a', line: 'x' });
  t.deepEqual(lines, ['x']);
});

test('a throwing listener does not stop delivery to the others', (t) => {
  const errors: unknown[] = [];
  const bus = new EventBus({ onListenerError: (error) => errors.push(error) });
  let delivered = 0;
  bus.subscribe(() => {
    throw new Error('broken UI');
  });
  bus.subscribe(() => delivered++);
  bus.emit({ kind: 'run.end', ok: true, ms: 1 });
  t.is(delivered, 1);
  t.is((errors[0] as Error).message, 'broken UI');
});

test('once resolves on the first matching event and rejects on abort', async (t) => {
  const bus = new EventBus();
  const booted = bus.once('guest.booted', (event) => event.version === '2');
  bus.emit({ kind: 'guest.booted', node: 'n', bootId: 'b1', version: '1', commit: 'c1' });
  bus.emit({ kind: 'guest.booted', node: 'n', bootId: 'b2', version: '2', commit: 'c2' });
  t.is((await booted).bootId, 'b2');

  const controller = new AbortController();
  const never = bus.once('guest.booted', () => true, controller.signal);
  controller.abort(new Error('stopped'));
  await t.throwsAsync(never, { message: 'stopped' });
});
