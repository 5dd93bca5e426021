import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('power-loss: power cut while staging, power back: the node boots v1 (never bricked), stages again and stays', async (t) => {
  const run = await runScenarioCli('power-loss');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '1']);
  t.true(
    run.events.some((e) => e.kind === 'vm.stopped'),
    'the plug was pulled',
  );
  // pivot ran on both boots: two pulls, the second one staged; the only failure is the named missing reboot.
  t.is(run.events.filter((e) => e.kind === 'guest.pivot' && e.phase === 'pulling').length, 2);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [e.reason] : []));
  t.is(failures.length, 1, failures.join('\n'));
  t.regex(failures[0]!, /ConditionFirstBoot=true\), and this was boot 2 of node1/);
  t.deepEqual(leftoverDomains('power-loss'), []);
});
