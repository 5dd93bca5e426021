import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('power-loss: power cut while staging, power back: the node boots (never bricked) and finishes the pivot', async (t) => {
  const run = await runScenarioCli('power-loss');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  const versions = bootedVersions(run.events);
  t.is(versions[0], '1');
  t.is(versions.at(-1), '2');
  t.true(
    run.events.some((e) => e.kind === 'vm.stopped'),
    'the plug was pulled',
  );
  t.false(run.events.some((e) => e.kind === 'guest.failure'));
  t.deepEqual(leftoverDomains('power-loss'), []);
});
