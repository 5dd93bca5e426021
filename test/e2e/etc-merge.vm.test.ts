import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test("etc-merge: ostree's three-way /etc merge keeps local edits and new files, takes the new default of an untouched file", async (t) => {
  t.timeout(45 * 60_000);
  const run = await runScenarioCli('etc-merge', { timeoutMs: 42 * 60_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  t.true(
    run.steps.some((step) => step.startsWith('✓ ssh node1') && step.includes('/usr/etc/fixture/both.conf')),
    run.steps.join('\n'),
  );
  t.is(run.events.filter((e) => e.kind === 'guest.failure').length, 0);
  t.deepEqual(leftoverDomains('etc-merge'), []);
});
