import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

type Request = Stamped<EventOf<'registry.request'>>;

test('registry-outage: the registry stops during the pull and comes back; the pivot completes', async (t) => {
  const run = await runScenarioCli('registry-outage');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const stops = run.events.filter((e) => e.kind === 'registry.stopped').length;
  t.true(stops >= 2, 'stopped by the fault, and at the end');
  t.false(run.events.some((e) => e.kind === 'guest.failure'));

  // The fault proves itself: a blob transfer was cut by the outage (the registry's log: fewer bytes sent than the
  // response promised), and the same blob was served in full afterwards (from the start, or the rest with Range).
  const blobGets = run.events.filter(
    (e): e is Request => e.kind === 'registry.request' && e.method === 'GET' && e.path.includes('/blobs/'),
  );
  const cut = blobGets.filter((e) => e.length !== undefined && e.bytes < e.length);
  const t0 = run.events[0]!.at;
  const timeline = run.events
    .filter(
      (e) =>
        /^(registry|guest|step\.(pass|fail))/.test(e.kind) &&
        !(e.kind === 'registry.request' && !e.path.includes('/blobs/')),
    )
    .map((e) => `${((e.at - t0) / 1000).toFixed(1)} ${e.kind} ${JSON.stringify(e).slice(0, 160)}`)
    .join('\n');
  t.true(cut.length >= 1, `a transfer was cut:\n${timeline}`);
  // The outage begins when the `fault: down` step starts (the end of the wait before it): stopping closes the open
  // transfers, whose `registry.request` events can come before the `registry.stopped` that follows them.
  const outage = run.events.find((e) => e.kind === 'step.pass' && e.name === 'wait 5s')!;
  for (const request of cut) {
    t.true(
      request.at >= outage.at,
      `cut once the outage began: ${request.path} ${request.bytes}/${request.length} at ${((request.at - t0) / 1000).toFixed(1)} s\n${timeline}`,
    );
    const later = blobGets.filter((e) => e.path === request.path && e.at > request.at && e.bytes === e.length);
    t.true(later.length >= 1, `${request.path} was served again in full after the cut`);
  }
  // And the guest saw it: its pull failed on the outage and was tried again (the pivot agent's retry line).
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  const retry = console.find((line) =>
    /skopeo: .*(connection refused|EOF|connection reset|broken pipe)|failed: exit status \d+; retrying/i.test(line),
  );
  t.truthy(retry, `a retry line on the console; last lines:\n${console.slice(-30).join('\n')}`);
  t.log(`cut: ${cut.map((e) => `${e.bytes} of ${e.length} bytes`).join(', ')}; guest: ${retry}`);
  t.deepEqual(leftoverDomains('registry-outage'), []);
});
