import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('already-at-target: asked over ssh to pivot to the image it runs, pivot refuses; nothing staged, no reboot', async (t) => {
  t.timeout(25 * 60_000);
  const run = await runScenarioCli('already-at-target');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
  t.is(skipped.length, 1);
  t.regex(skipped[0] && 'reason' in skipped[0] ? skipped[0].reason : '', /already at target/);
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.true(console.some((line) => /root\.go:415\] Already at target pivot; exiting\.\.\./.test(line)));
  const staged = run.events.filter((e) => e.kind === 'guest.pivot' && e.phase === 'staged');
  t.is(staged.length, 1, 'only the first hop staged');
  t.deepEqual(leftoverDomains('already-at-target'), []);
});
