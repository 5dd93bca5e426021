import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('old-to-new under UEFI: the same disk boots through OVMF and pivots to v2; ssh reaches the core user', async (t) => {
  const run = await runScenarioCli('old-to-new-uefi');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  // prepare, up, ignition, staged, booted, assert, then the two ssh checks on v2 (the core user Ignition created, with the
  // session's key in authorized_keys.d; sshd refuses passwords)
  t.is(run.steps.length, 8, run.steps.join('\n'));
  t.true(
    run.steps.every((step) => step.startsWith('✓ ')),
    run.steps.join('\n'),
  );
  t.is(run.steps.filter((step) => step.startsWith('✓ ssh node1 ')).length, 2, run.steps.join('\n'));
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  // The kernel found UEFI firmware (OVMF is EDK II), on both boots; under BIOS it prints no such line.
  const consoleLines = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.is(consoleLines.filter((line) => /efi: EFI v[\d.]+ by EDK II/.test(line)).length, 2);
  // The firmware ran the fixture's GRUB EFI image, which reads the syslinux configuration as RHCOS's does.
  t.true(consoleLines.some((line) => /fixture-grub: loading \/syslinux\/syslinux\.cfg/.test(line)));
  t.deepEqual(leftoverDomains('old-to-new-uefi'), []);
});
