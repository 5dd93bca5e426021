import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli, session } from './run-scenario.js';

test.serial('old-to-new: fixture v1 pivots to an oscontainer built from v2, and everything is removed', async (t) => {
  const run = await runScenarioCli('old-to-new');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(run.steps, [
    '✓ prepare',
    '✓ up',
    '✓ expect node1 ignition within 3m',
    '✓ expect node1 pivot.pulling within 3m',
    '✓ expect node1 pivot.staged within 5m',
    '✓ expect node1 booted fixture:2 within 5m',
    '✓ assert node1 booted fixture:2 reboots=1',
  ]);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const phases = run.events.flatMap((e) => (e.kind === 'guest.pivot' ? [e.phase] : []));
  t.deepEqual(phases, ['pulling', 'staging', 'staged', 'rebooting']);
  const target = run.events.find((e) => e.kind === 'guest.pivot');
  t.regex(
    target && 'target' in target ? target.target : '',
    /^10\.0\.2\.2:\d+\/devpivot\/fixture-2@sha256:[0-9a-f]{64}$/,
  );
  t.true(
    run.events.some((e) => e.kind === 'blob.progress' && e.sent === e.total && e.total > 1_000_000),
    'the layer was pulled',
  );
  t.deepEqual(leftoverDomains('old-to-new'), []);
});

test.serial('Ctrl-C during a run: the run stops, the VM is removed, exit status 130', async (t) => {
  const run = await runScenarioCli('old-to-new', {
    extraArgs: ['--session', session('interrupt')],
    onEvent: (event, kill) => {
      if (event.kind === 'vm.started') kill('SIGINT');
    },
  });
  t.is(run.code, 130, 'interrupted by SIGINT (README "Exit status")');
  t.regex(run.steps.at(-1) ?? '', /^✗ .*: interrupted \(interrupted by SIGINT\)$/);
  t.like(run.events.at(-1), { kind: 'run.end', ok: false });
  t.deepEqual(leftoverDomains('interrupt'), []);
});
