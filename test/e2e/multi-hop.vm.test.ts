/**
 * scenarios/multi-hop.yaml: v1 → v2 by Ignition; a second request for the image the node runs is refused by pivot
 * (nothing staged, no reboot: this was already-at-target.vm.test.ts, which booted the same v1 and made the same
 * first pivot); a third request takes it to v3. One VM, three boots.
 */
import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('multi-hop: v1 → v2 by Ignition, the same image again is refused, → v3 over ssh; ssh sees each version', async (t) => {
  t.timeout(40 * 60_000);
  const run = await runScenarioCli('multi-hop', { timeoutMs: 2_400_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(run.steps, [
    '✓ prepare',
    '✓ up',
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
  t.deepEqual(leftoverDomains('multi-hop'), []);
});
