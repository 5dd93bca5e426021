import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('two-nodes: two nodes pivot concurrently from one registry', async (t) => {
  const run = await runScenarioCli('two-nodes');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events, 'node-a'), ['1', '2']);
  t.deepEqual(bootedVersions(run.events, 'node-b'), ['1', '2']);
  t.deepEqual(leftoverDomains('two-nodes'), []);
});
