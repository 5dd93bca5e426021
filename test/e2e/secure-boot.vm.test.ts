import { existsSync, readdirSync } from 'node:fs';
import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

/** Where libvirt keeps a domain's copy of the variable store (`<nvram template=…>` without a path), qemu:///system. */
const nvramOf = (domain: string) => `/var/lib/libvirt/qemu/nvram/${domain}_VARS.fd`;
/** Where libvirt keeps swtpm's state, one directory per domain UUID (qemu:///system). */
const SWTPM_STATE = '/var/lib/libvirt/swtpm';
const tpmStates = () => (existsSync(SWTPM_STATE) ? readdirSync(SWTPM_STATE) : []);

test('secure-boot: shim -> GRUB -> kernel under Secure Boot with a TPM and a TLS registry requiring a pull secret, both deployments; PCRs per deployment; the per-VM variables and TPM state live as long as the node', async (t) => {
  t.timeout(30 * 60_000); // TCG with SMM: the Secure Boot firmware is slower than plain OVMF
  let domain = '';
  let nvramOnV2: boolean | undefined;
  let tpmOnV2: string[] = [];
  const before = tpmStates();
  const run = await runScenarioCli('secure-boot', {
    timeoutMs: 30 * 60_000,
    onEvent: (event) => {
      if (event.kind === 'vm.defined') domain = event.domain;
      if (event.kind === 'guest.booted' && event.version === '2' && nvramOnV2 === undefined) {
        nvramOnV2 = existsSync(nvramOf(domain));
        tpmOnV2 = tpmStates().filter((uuid) => !before.includes(uuid));
      }
    },
  });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  // prepare, up, ignition, PCRs on v1, staged, booted, assert, Secure Boot and lockdown, PCRs v1/v2
  t.is(run.steps.length, 9, run.steps.join('\n'));
  t.is(run.steps.filter((step) => step.startsWith('✓ ssh node1 ')).length, 3, run.steps.join('\n'));
  t.true(
    run.steps.every((step) => step.startsWith('✓ ')),
    run.steps.join('\n'),
  );
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const lines = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  // Both boots went through the verifying chain: the kernel's EFI stub and the kernel itself see Secure Boot on
  // (and lock down), and shim handed the kernel its MOK list with Debian's CA (MokListRT).
  t.is(lines.filter((line) => /EFI stub: UEFI Secure Boot is enabled/.test(line)).length, 2);
  t.is(lines.filter((line) => /secureboot: Secure boot enabled/.test(line)).length, 2);
  t.true(lines.some((line) => /tpm_tis \S+: 2\.0 TPM/.test(line)));
  t.true(lines.some((line) => /integrity: Loaded X\.509 cert 'Debian Secure Boot CA/.test(line)));
  t.is(run.events.filter((e) => e.kind === 'guest.failure').length, 0);
  // ... and pulled v2 over HTTPS from a registry that required its pull secret
  const listening = run.events.find((e) => e.kind === 'registry.listening');
  t.true(listening?.kind === 'registry.listening' && listening.url.startsWith('https://') && !!listening.ca);
  t.true(
    run.events.some((e) => e.kind === 'registry.request' && e.status === 200 && /\/manifests\//.test(e.path)),
    'a manifest served',
  );
  // The copy of OVMF_VARS_4M.ms.fd: there across the pivot's reboot, removed with the node
  t.true(nvramOnV2, nvramOf(domain));
  t.false(existsSync(nvramOf(domain)), nvramOf(domain));
  // swtpm's state: one new directory while the node ran (kept across its reboots), none left after down
  t.is(tpmOnV2.length, 1, JSON.stringify(tpmOnV2));
  t.deepEqual(
    tpmStates().filter((uuid) => !before.includes(uuid)),
    [],
  );
  t.deepEqual(leftoverDomains('secure-boot'), []);
});
