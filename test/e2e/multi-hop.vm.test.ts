import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('multi-hop: v1 → v2 by Ignition, → v3 by a second request over ssh; ssh sees each version', async (t) => {
  t.timeout(40 * 60_000);
  const run = await runScenarioCli('multi-hop', { timeoutMs: 2_400_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(run.steps, [
    '✓ prepare',
    '✓ up',
    '✓ expect node1 booted fixture:2 within 10m',
    `✓ ssh node1 'cat /etc/os-release' =~ /VERSION_ID="2"/ within 3m`,
    '✓ pivot node1 to fixture:3',
    '✓ expect node1 pivot.staged within 5m',
    '✓ expect node1 booted fixture:3 within 10m',
    `✓ ssh node1 'cat /etc/os-release' =~ /VERSION_ID="3"/ within 3m`,
    '✓ assert node1 booted fixture:3 reboots=2 failed=false',
  ]);
  t.deepEqual(bootedVersions(run.events), ['1', '2', '3']);
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  // the second hop is pivot's own work, started by pivot.service with the pullspec devpivot wrote
  t.true(
    console.some((line) => /root\.go:\d+\] Using image pullspec from \/etc\/pivot\/image-pullspec/.test(line)),
    'pivot read the pullspec file',
  );
  t.true(
    console.some((line) => /root\.go:\d+\] Previous pivot: 10\.0\.2\.2:\d+\/devpivot\/fixture-2@sha256:/.test(line)),
    'pivot compared with the v2 origin of the first hop',
  );
  t.true(console.some((line) => /Pivoting to: 3 \(/.test(line)));
  const targets = run.events.flatMap((e) => (e.kind === 'guest.pivot' && e.phase === 'staged' ? [e.target] : []));
  t.is(targets.length, 2);
  t.regex(targets[1] ?? '', /\/devpivot\/fixture-3@sha256:[0-9a-f]{64}$/);
  t.deepEqual(leftoverDomains('multi-hop'), []);
});
