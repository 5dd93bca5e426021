import { existsSync, readdirSync } from 'node:fs';
import test from 'ava';
import type { Stamped } from '../../src/core/events.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

/** Where libvirt keeps a domain's copy of the variable store (`<nvram template=…>` without a path), qemu:///system. */
const nvramOf = (domain: string) => `/var/lib/libvirt/qemu/nvram/${domain}_VARS.fd`;
/** Where libvirt keeps swtpm's state, one directory per domain UUID (qemu:///system). */
const SWTPM_STATE = '/var/lib/libvirt/swtpm';
const tpmStates = () => (existsSync(SWTPM_STATE) ? readdirSync(SWTPM_STATE) : []);
const nodeEvents = (events: Stamped[], node: string) => events.filter((e) => 'node' in e && e.node === node);

/*
 * The same run carries the refused pull secret (this was pull-secret.vm.test.ts, whose node with the secret pivoted
 * over the same HTTPS as node1 does): `no-secret`, an rpm-ostree node given no pull secret, pulls anonymously
 * (ostree-ext without /etc/ostree/auth.json) and its 401 is classified as a pull failure, credentials refused.
 */

test('secure-boot: shim -> GRUB -> kernel under Secure Boot with a TPM and a TLS registry requiring a pull secret, both deployments; PCRs per deployment; the per-VM variables and TPM state live as long as the node; the node without the secret fails with the 401', async (t) => {
  t.timeout(30 * 60_000); // TCG with SMM: the Secure Boot firmware is slower than plain OVMF
  let domain = '';
  let nvramOnV2: boolean | undefined;
  let tpmOnV2: string[] = [];
  const before = tpmStates();
  const run = await runScenarioCli('secure-boot', {
    timeoutMs: 30 * 60_000,
    onEvent: (event) => {
      if (event.kind === 'vm.defined' && event.node === 'node1') domain = event.domain;
      if (event.kind === 'guest.booted' && event.node === 'node1' && event.version === '2' && nvramOnV2 === undefined) {
        nvramOnV2 = existsSync(nvramOf(domain));
        tpmOnV2 = tpmStates().filter((uuid) => !before.includes(uuid));
      }
    },
  });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  // prepare, up, no-secret's failure, ignition, PCRs on v1, staged, booted, assert, Secure Boot and lockdown,
  // PCRs v1/v2, no-secret's assert
  t.is(run.steps.length, 11, run.steps.join('\n'));
  t.is(run.steps.filter((step) => step.startsWith('✓ ssh node1 ')).length, 3, run.steps.join('\n'));
  t.true(
    run.steps.every((step) => step.startsWith('✓ ')),
    run.steps.join('\n'),
  );
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const lines = run.events.flatMap((e) => (e.kind === 'vm.console' && e.node === 'node1' ? [e.line] : []));
  // Both boots went through the verifying chain: the kernel's EFI stub and the kernel itself see Secure Boot on
  // (and lock down), and shim handed the kernel its MOK list with Debian's CA (MokListRT).
  t.is(lines.filter((line) => /EFI stub: UEFI Secure Boot is enabled/.test(line)).length, 2);
  t.is(lines.filter((line) => /secureboot: Secure boot enabled/.test(line)).length, 2);
  t.true(lines.some((line) => /tpm_tis \S+: 2\.0 TPM/.test(line)));
  t.true(lines.some((line) => /integrity: Loaded X\.509 cert 'Debian Secure Boot CA/.test(line)));
  t.is(nodeEvents(run.events, 'node1').filter((e) => e.kind === 'guest.failure').length, 0);
  // ... and pulled v2 over HTTPS from a registry that required its pull secret
  const listening = run.events.find((e) => e.kind === 'registry.listening');
  t.true(listening?.kind === 'registry.listening' && listening.url.startsWith('https://') && !!listening.ca);
  t.true(
    run.events.some(
      (e) => e.kind === 'registry.request' && e.node === 'node1' && e.status === 200 && /\/manifests\//.test(e.path),
    ),
    'a manifest served',
  );
  t.true(
    nodeEvents(run.events, 'node1').some(
      (e) => e.kind === 'registry.request' && e.status === 200 && e.path.includes('/blobs/'),
    ),
    'node1 was served its blobs with its credentials',
  );
  // no-secret: no pivot, one failure, its reason the refused credentials; every request it made was answered 401
  t.deepEqual(bootedVersions(run.events, 'no-secret'), ['1']);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [{ node: e.node, reason: e.reason }] : []));
  t.is(failures.length, 1, JSON.stringify(failures));
  t.is(failures[0]!.node, 'no-secret');
  t.regex(
    failures[0]!.reason,
    /^pull failed: registry credentials refused \(unauthorized(: authentication required)?\)/,
  );
  t.log(`guest failure: ${failures[0]!.reason}`);
  const statuses = nodeEvents(run.events, 'no-secret').flatMap((e) =>
    e.kind === 'registry.request' ? [e.status] : [],
  );
  t.true(statuses.length > 0);
  t.true(
    statuses.every((s) => s === 401),
    JSON.stringify(statuses),
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
