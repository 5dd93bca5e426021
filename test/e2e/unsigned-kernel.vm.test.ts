import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('unsigned-kernel: GRUB refuses the v2 kernel under Secure Boot; the node fails on that boot, named, not by timeout', async (t) => {
  t.timeout(30 * 60_000); // TCG with SMM: the Secure Boot firmware is slower than plain OVMF
  const run = await runScenarioCli('unsigned-kernel', { timeoutMs: 30 * 60_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.true(
    run.steps.every((step) => step.startsWith('✓ ')),
    run.steps.join('\n'),
  );
  t.deepEqual(bootedVersions(run.events), ['1']);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [e] : []));
  t.is(failures.length, 1, JSON.stringify(failures));
  t.like(failures[0], { cause: 'secure-boot', line: 'error: bad shim signature.' });
  t.regex(failures[0]!.reason, /^Secure Boot: GRUB refused the kernel: shim did not verify it/);
  // It came on the boot after the pivot's reboot, with nothing of a booted system before it
  const reboot = run.events.findIndex((e) => e.kind === 'vm.reboot');
  const failure = run.events.indexOf(failures[0]!);
  t.true(reboot >= 0 && failure > reboot);
  t.false(run.events.slice(reboot, failure).some((e) => e.kind === 'guest.booted'));
  t.deepEqual(leftoverDomains('unsigned-kernel'), []);
});
