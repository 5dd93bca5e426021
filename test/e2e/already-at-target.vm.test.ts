import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('already-at-target: the new deployment refuses to pivot again and does not reboot', async (t) => {
  const run = await runScenarioCli('already-at-target');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
  t.is(skipped.length, 1);
  t.regex(skipped[0] && 'reason' in skipped[0] ? skipped[0].reason : '', /already at target/);
  t.deepEqual(leftoverDomains('already-at-target'), []);
});
