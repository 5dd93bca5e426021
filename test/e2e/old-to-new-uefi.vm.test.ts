import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('old-to-new under UEFI: the same disk boots through OVMF and pivots to v2', async (t) => {
  const run = await runScenarioCli('old-to-new-uefi');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  // The kernel found UEFI firmware (OVMF is EDK II), on both boots; under BIOS it prints no such line.
  const consoleLines = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.is(consoleLines.filter((line) => /efi: EFI v[\d.]+ by EDK II/.test(line)).length, 2);
  t.deepEqual(leftoverDomains('old-to-new-uefi'), []);
});
