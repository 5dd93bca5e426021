import { EventEmitter } from 'node:events';
import test from 'ava';
import { EMERGENCY_BUDGET_MS, installInterrupts } from '../../src/cli/interrupts.js';

function fakeProcess() {
  const emitter = new EventEmitter();
  const exits: { code: number; at: number }[] = [];
  return {
    host: {
      on: (signal: 'SIGINT' | 'SIGTERM', listener: () => void) => emitter.on(signal, listener),
      exit: (code: number) => {
        exits.push({ code, at: Date.now() });
      },
    },
    send: (signal: 'SIGINT' | 'SIGTERM') => emitter.emit(signal),
    exits,
  };
}

test('the first signal aborts with an ABORTED error carrying 130 or 143; nothing exits yet', (t) => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    const proc = fakeProcess();
    const interrupts = installInterrupts(proc.host);
    proc.send(signal);
    t.true(interrupts.signal.aborted);
    t.like(interrupts.signal.reason, { code: 'ABORTED', exitCode: code, message: `interrupted by ${signal}` });
    t.deepEqual(proc.exits, []);
  }
});

test('a second signal runs the emergency hooks and exits, a hung hook within the budget', async (t) => {
  const proc = fakeProcess();
  const interrupts = installInterrupts(proc.host);
  const ran: string[] = [];
  interrupts.onEmergency(async () => {
    ran.push('destroy');
  });
  interrupts.onEmergency(() => new Promise(() => {})); // a destroy that never returns
  proc.send('SIGINT');
  const second = Date.now();
  proc.send('SIGTERM');
  while (proc.exits.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  t.deepEqual(ran, ['destroy']);
  t.is(proc.exits[0]!.code, 143);
  t.true(proc.exits[0]!.at - second <= EMERGENCY_BUDGET_MS + 200);
});

test('while a kept run is served, a signal ends the serving and is no interruption; the next one is', async (t) => {
  const proc = fakeProcess();
  const interrupts = installInterrupts(proc.host);
  const serving = interrupts.serve();
  proc.send('SIGTERM');
  t.is(await serving.stopped, 'SIGTERM');
  t.false(interrupts.signal.aborted);
  proc.send('SIGINT');
  while (proc.exits.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  t.is(proc.exits[0]!.code, 130, 'a signal during the cleanup after serving exits at once');
});

test('a closed output is a first SIGPIPE: ABORTED with 141, once; a signal after it runs the emergency hooks', async (t) => {
  const proc = fakeProcess();
  const interrupts = installInterrupts(proc.host);
  const ran: string[] = [];
  interrupts.onEmergency(async () => {
    ran.push('destroy');
  });
  interrupts.outputClosed();
  interrupts.outputClosed(); // every later write fails too: not a second signal
  t.like(interrupts.signal.reason, { code: 'ABORTED', exitCode: 141, message: 'its output was closed (EPIPE)' });
  t.deepEqual(proc.exits, []);
  t.deepEqual(ran, []);
  proc.send('SIGTERM');
  while (proc.exits.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  t.deepEqual(ran, ['destroy']);
  t.is(proc.exits[0]!.code, 143);
});
