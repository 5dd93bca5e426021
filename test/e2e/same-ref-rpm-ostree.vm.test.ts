import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('same-ref-rpm-ostree: a rebase to the ref the node runs is refused by rpm-ostree; nothing staged, no reboot', async (t) => {
  t.timeout(25 * 60_000);
  const run = await runScenarioCli('same-ref-rpm-ostree');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
  t.is(skipped.length, 1);
  t.is(skipped[0] && 'reason' in skipped[0] ? skipped[0].reason : '', 'old and new refs are equal');
  const staged = run.events.filter((e) => e.kind === 'guest.pivot' && e.phase === 'staged');
  t.is(staged.length, 1, 'only the first rebase staged');
  t.is(run.events.filter((e) => e.kind === 'guest.failure').length, 0);
  t.deepEqual(leftoverDomains('same-ref-rpm-ostree'), []);
});
