import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('ostree-3392: with the fixes off, a power cut right after the deploy leaves the node unbootable', async (t) => {
  const run = await runScenarioCli('ostree-3392');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  const failure = run.events.find((e) => e.kind === 'guest.failure');
  t.regex(failure && 'reason' in failure ? failure.reason : '', /emergency mode|3392/);
  // The boot after the cut stops in the fixture initramfs for exactly the #3392 reason (GRUB booted the pre-swap
  // entry, whose ostree= target is gone), not for another one; and it never reached the booted report.
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.true(
    console.some((line) => /You are in emergency mode.*does not resolve to a deployment.*3392/.test(line)),
    'the initramfs names the unresolved ostree= deployment',
  );
  t.deepEqual(bootedVersions(run.events), ['1']);
  t.deepEqual(leftoverDomains('ostree-3392'), []);
});
