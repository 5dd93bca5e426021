/**
 * scenarios/multi-hop.yaml: v1 → v2 by Ignition; a second request for the image the node runs is refused by pivot
 * (nothing staged, no reboot: this was already-at-target.vm.test.ts, which booted the same v1 and made the same
 * first pivot); a third request takes it to v3. One VM, three boots. The first hop's pull is hit by a registry
 * outage, and completes (this was registry-outage.vm.test.ts, which booted the same v1 and made the same legacy
 * pivot to v2).
 */
import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

type Request = Stamped<EventOf<'registry.request'>>;

test('multi-hop: v1 → v2 by Ignition (the registry stops during the pull and comes back; the pivot completes), the same image again is refused, → v3 over ssh; ssh sees each version', async (t) => {
  t.timeout(40 * 60_000);
  const run = await runScenarioCli('multi-hop', { timeoutMs: 2_400_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(run.steps, [
    '✓ prepare',
    '✓ fault registry slow 1MiB/s',
    '✓ up',
    '✓ expect node1 pivot.pulling within 4m',
    '✓ wait 30s',
    '✓ fault registry down',
    '✓ wait 12s',
    '✓ fault registry up',
    '✓ fault registry clear',
    '✓ expect node1 booted fixture:2 within 10m',
    `✓ ssh node1 'cat /etc/os-release' =~ /VERSION_ID="2"/ within 3m`,
    '✓ pivot node1 to fixture:2',
    '✓ expect node1 pivot.skipped within 3m',
    '✓ assert node1 booted fixture:2 reboots=1 failed=false',
    '✓ pivot node1 to fixture:3',
    '✓ expect node1 pivot.staged within 5m',
    '✓ expect node1 booted fixture:3 within 10m',
    `✓ ssh node1 'cat /etc/os-release' =~ /VERSION_ID="3"/ within 3m`,
    '✓ assert node1 booted fixture:3 reboots=2 failed=false',
  ]);
  // One boot per version: the refused request rebooted nothing (another boot of v2 would be listed).
  t.deepEqual(bootedVersions(run.events), ['1', '2', '3']);
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));

  // The request for the running image: pivot compared it with the booted origin and refused, once.
  const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
  t.is(skipped.length, 1);
  t.regex(skipped[0] && 'reason' in skipped[0] ? skipped[0].reason : '', /already at target/);
  t.true(console.some((line) => /root\.go:415\] Already at target pivot; exiting\.\.\./.test(line)));

  // The v3 hop is pivot's own work, started by pivot.service with the pullspec devpivot wrote.
  t.true(
    console.some((line) => /root\.go:\d+\] Using image pullspec from \/etc\/pivot\/image-pullspec/.test(line)),
    'pivot read the pullspec file',
  );
  t.true(
    console.some((line) => /root\.go:\d+\] Previous pivot: 10\.0\.2\.2:\d+\/devpivot\/fixture-2@sha256:/.test(line)),
    'pivot compared with the v2 origin of the first hop',
  );
  t.true(console.some((line) => /Pivoting to: 3 \(/.test(line)));
  // Staged twice (v2, v3): the refused request added none.
  const targets = run.events.flatMap((e) => (e.kind === 'guest.pivot' && e.phase === 'staged' ? [e.target] : []));
  t.is(targets.length, 2);
  t.regex(targets[0] ?? '', /\/devpivot\/fixture-2@sha256:[0-9a-f]{64}$/);
  t.regex(targets[1] ?? '', /\/devpivot\/fixture-3@sha256:[0-9a-f]{64}$/);

  // (registry-outage) stopped by the fault, and at the end; no failure
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
  const outage = run.events.find((e) => e.kind === 'step.pass' && e.name === 'wait 30s')!;
  for (const request of cut) {
    t.true(
      request.at >= outage.at,
      `cut once the outage began: ${request.path} ${request.bytes}/${request.length} at ${((request.at - t0) / 1000).toFixed(1)} s\n${timeline}`,
    );
    const later = blobGets.filter((e) => e.path === request.path && e.at > request.at && e.bytes === e.length);
    t.true(later.length >= 1, `${request.path} was served again in full after the cut`);
  }
  // And the guest saw it: its pull failed on the outage and was tried again (the pivot agent's retry line).
  const retry = console.find((line) =>
    /skopeo: .*(connection refused|EOF|connection reset|broken pipe)|failed: exit status \d+; retrying/i.test(line),
  );
  t.truthy(retry, `a retry line on the console; last lines:\n${console.slice(-30).join('\n')}`);
  t.log(`cut: ${cut.map((e) => `${e.bytes} of ${e.length} bytes`).join(', ')}; guest: ${retry}`);
  t.deepEqual(leftoverDomains('multi-hop'), []);
});
