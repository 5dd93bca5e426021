import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('kernel-args: the whitelisted argument reaches the new deployment, the other is refused', async (t) => {
  const run = await runScenarioCli('kernel-args');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const lines = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.true(lines.some((line) => /root\.go:134\] devpivot\.test=kargs not a whitelisted kernel argument$/.test(line)));
  t.true(lines.some((line) => /Running: rpm-ostree kargs --append=nosmt$/.test(line)));
  const cmdlines = lines.filter((line) => /\] Command line: /.test(line));
  t.is(cmdlines.length, 2);
  t.false(cmdlines[0]!.includes(' nosmt'));
  t.true(cmdlines[1]!.includes(' nosmt'), cmdlines[1]);
  t.false(
    cmdlines.some((line) => line.includes('devpivot.test=kargs')),
    'the refused argument is on no command line',
  );
  t.deepEqual(leftoverDomains('kernel-args'), []);
});
