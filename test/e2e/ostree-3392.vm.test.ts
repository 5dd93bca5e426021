import test from 'ava';
import { leftoverDomains, runScenarioCli } from './run-scenario.js';

test('ostree-3392: with the fixes off, a power cut right after the deploy leaves the node unbootable', async (t) => {
  const run = await runScenarioCli('ostree-3392');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  const failure = run.events.find((e) => e.kind === 'guest.failure');
  t.regex(failure && 'reason' in failure ? failure.reason : '', /emergency mode|3392/);
  t.deepEqual(leftoverDomains('ostree-3392'), []);
});
