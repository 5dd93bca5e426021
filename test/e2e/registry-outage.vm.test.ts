import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('registry-outage: the registry stops during the pull and comes back; the pivot completes', async (t) => {
  const run = await runScenarioCli('registry-outage');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const stops = run.events.filter((e) => e.kind === 'registry.stopped').length;
  t.true(stops >= 2, 'stopped by the fault, and at the end');
  t.false(run.events.some((e) => e.kind === 'guest.failure'));
  t.deepEqual(leftoverDomains('registry-outage'), []);
});
