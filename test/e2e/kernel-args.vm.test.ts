import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('kernel-args: the new deployment boots with the added kernel argument', async (t) => {
  const run = await runScenarioCli('kernel-args');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const lines = run.events.flatMap((e) =>
    e.kind === 'vm.console' && e.line.includes('devpivot.test=kargs') ? [e.line] : [],
  );
  t.true(lines.length > 0);
  t.deepEqual(leftoverDomains('kernel-args'), []);
});
