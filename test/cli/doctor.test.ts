import { existsSync } from 'node:fs';
import test from 'ava';
import { runCli } from '../helpers/cli.js';

interface Row {
  name: string;
  ok: boolean;
  detail: string;
  fix: string;
}

// Doctor against this real machine: `npm test` has installed the packages and started libvirtd.
test('doctor --json reports every requirement of this machine truthfully', async (t) => {
  const result = await runCli(['doctor', '--json'], { timeoutMs: 60_000 });
  const rows = JSON.parse(result.stdout) as Row[];
  const byName = new Map(rows.map((row) => [row.name, row]));
  for (const name of [
    'libvirt',
    'qemu',
    'accel',
    'fw_cfg',
    'skopeo',
    'ostree',
    'openssl',
    'ignition-validate',
    'grub-pc-bin',
    'signed-boot-chain',
    'secure-boot',
    'swtpm',
    'disk',
    'storage-pool',
  ]) {
    t.true(byName.has(name), `missing row ${name}`);
  }
  for (const row of rows) t.deepEqual(Object.keys(row).sort(), ['detail', 'fix', 'name', 'ok']);
  t.true(byName.get('libvirt')!.ok, byName.get('libvirt')!.detail);
  t.regex(byName.get('libvirt')!.detail, /libvirt \d+\.\d+/);
  t.regex(byName.get('accel')!.detail, /^(KVM|TCG \(KVM not usable: .+\))$/);
  if (!existsSync('/dev/kvm')) t.regex(byName.get('accel')!.detail, /^TCG/);
  // Secure Boot and TPM rows say what this host has, by the files themselves
  t.is(byName.get('secure-boot')!.ok, existsSync('/usr/share/OVMF/OVMF_VARS_4M.ms.fd'));
  t.is(byName.get('swtpm')!.ok, existsSync('/usr/bin/swtpm') && existsSync('/usr/bin/swtpm_setup'));
  if (byName.get('swtpm')!.ok) t.regex(byName.get('swtpm')!.detail, /TPM emulator version \d/);
  t.is(result.code, rows.every((row) => row.ok) ? 0 : 1);
});

test('doctor fails with a fix when libvirt is unreachable at the chosen URI', async (t) => {
  const uri = 'qemu+unix:///system?socket=/nonexistent/libvirt-sock';
  const result = await runCli(['doctor', '--json', '--connect', uri], { timeoutMs: 60_000 });
  t.is(result.code, 1);
  const libvirt = (JSON.parse(result.stdout) as Row[]).find((row) => row.name === 'libvirt')!;
  t.false(libvirt.ok);
  t.true(libvirt.detail.startsWith(uri));
  t.not(libvirt.fix, '');
});

test('doctor prints a table with a summary line', async (t) => {
  const result = await runCli(['doctor'], { timeoutMs: 60_000 });
  t.regex(result.stdout, /^(ok {2}|FAIL) {2}libvirt /m);
  t.regex(result.stdout, /(All requirements met\.|requirement\(s\) missing)/);
});
