import { join } from 'node:path';
import test from 'ava';
import type { Connection } from '../../src/vm/libvirt/connection.js';
import { ConsoleWatch } from '../../src/vm/libvirt/console-watch.js';
import { tempDir } from '../helpers/temp.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A console watch of `domain` over a fake connection; returns the warnings it gives. */
function watchWith(domain: string, connection: Partial<Connection>) {
  const warnings: string[] = [];
  const watch = new ConsoleWatch({
    domain,
    logPath: join(tempDir('devpivot-console-'), 'n.log'),
    onLine: () => {},
    onWarning: (message) => warnings.push(message),
    connection: () => connection as Connection,
  });
  return { watch, warnings };
}

/** A console watch over a fake connection whose lookups fail. */
const watchOver = (lookupDomain: () => Promise<never>) =>
  watchWith('devpivot-test-vm-none', { lookupDomain } as unknown as Partial<Connection>);

// The retry logic alone, over a connection that fails like a closed one: a libvirt-free unit test.
test('a console retry in flight when detach() runs never re-arms (the run would never exit)', async (t) => {
  let lookups = 0;
  const { watch, warnings } = watchOver(async () => {
    lookups++;
    await sleep(30); // detach() happens while this call is in flight
    throw new Error('the libvirt connection is closed');
  });
  watch.reattachSoon(10);
  await sleep(20); // the retry has started its lookup
  t.is(lookups, 1);
  watch.detach();
  await sleep(150);
  t.is(lookups, 1, 'no retry after detach');
  t.deepEqual(warnings, [], 'a detached console does not warn');
});

test('while still wanted, a failing console retries and warns once', async (t) => {
  let lookups = 0;
  const { watch, warnings } = watchOver(async () => {
    lookups++;
    throw new Error('connection reset');
  });
  watch.reattachSoon(10);
  await sleep(100);
  watch.detach();
  t.true(lookups >= 3, `retried ${lookups} times`);
  t.is(warnings.length, 1);
  t.regex(warnings[0]!, /console of devpivot-test-vm-none unavailable \(connection reset\); retrying/);
});

/** A watch over a fake connection whose domain is running and whose console opens after `openMs`. */
function watchOverRunning(openMs: number, lookupMs = 0) {
  const counts = { lookups: 0, opened: 0 };
  const domain = {
    isActive: async () => true,
    free: () => {},
    openConsole: async () => {
      await sleep(openMs);
      counts.opened++;
    },
  };
  const stream = { free: () => {}, close: async () => {}, readEvents: () => () => {} };
  const { watch, warnings } = watchWith('devpivot-test-vm-running', {
    lookupDomain: async () => {
      counts.lookups++;
      await sleep(lookupMs);
      return domain;
    },
    newStream: () => stream,
  } as unknown as Partial<Connection>);
  return { watch, counts, warnings };
}

test('two attaches at once open one console session (a second is refused by libvirt)', async (t) => {
  const { watch, counts, warnings } = watchOverRunning(30);
  await Promise.all([watch.attach(), watch.attach()]);
  t.is(counts.opened, 1);
  t.true(watch.attached);
  t.deepEqual(warnings, []);
  watch.detach();
});

test('the domain stopping drops a retry armed for the old process, also one already looking the domain up', async (t) => {
  const armed = watchOverRunning(0);
  armed.watch.reattachSoon(10);
  armed.watch.domainStopped();
  await sleep(60);
  t.is(armed.counts.lookups, 0, 'the armed retry never ran');
  armed.watch.detach();

  const inFlight = watchOverRunning(0, 30);
  inFlight.watch.reattachSoon(5);
  await sleep(20); // the retry is in its lookup
  t.is(inFlight.counts.lookups, 1);
  inFlight.watch.domainStopped();
  await sleep(60);
  t.is(inFlight.counts.opened, 0, 'it did not attach to whatever runs next');
  t.deepEqual(inFlight.warnings, []);
  inFlight.watch.detach();
});
