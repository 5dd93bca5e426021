import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('corrupt-oscontainer: the corrupted pull is refused and reported, the node stays on v1', async (t) => {
  const run = await runScenarioCli('corrupt-oscontainer');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1']);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [e.reason] : []));
  t.is(failures.length, 1);
  t.false(run.events.some((e) => e.kind === 'guest.pivot' && e.phase === 'staged'));
  t.deepEqual(leftoverDomains('corrupt-oscontainer'), []);
});
