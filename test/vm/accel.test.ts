import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { run } from '../../src/core/exec.js';
import {
  findProbeKernel,
  probeAccel,
  probeAccelCached,
  REMOTE_ACCEL_SCRIPT,
  remoteAccelAnswer,
} from '../../src/vm/accel.js';
import { tempDir } from '../helpers/temp.js';

function fakeQemu(script: string): string {
  const dir = tempDir('devpivot-accel-');
  const path = join(dir, 'qemu-system-x86_64');
  writeFileSync(path, `#!/bin/sh\n${script}\n`);
  chmodSync(path, 0o755);
  return path;
}

const kernelOrSkip = findProbeKernel() ?? '/boot/vmlinuz-missing';

test('a qemu that hangs under KVM is reported as TCG within the deadline', async (t) => {
  const started = Date.now();
  const probe = await probeAccel({ qemu: fakeQemu('sleep 60'), kernel: kernelOrSkip, timeoutMs: 500 });
  if (probe.detail.includes('/dev/kvm')) return t.pass(); // no /dev/kvm on this host: the probe never ran qemu
  t.is(probe.domainType, 'qemu');
  t.regex(probe.detail, /^TCG \(KVM not usable: no guest output within 0\.5 s/);
  t.true(Date.now() - started < 5000);
});

test('a qemu that aborts under KVM is reported as TCG with its last message', async (t) => {
  const probe = await probeAccel({
    qemu: fakeQemu('echo "kvm_buf_set_msrs: Assertion failed" >&2; exit 134'),
    kernel: kernelOrSkip,
  });
  if (probe.detail.includes('/dev/kvm')) return t.pass();
  t.is(probe.domainType, 'qemu');
  t.regex(probe.detail, /qemu exited \(134\) under KVM: kvm_buf_set_msrs/);
});

test('a qemu whose guest prints the kernel banner means KVM works', async (t) => {
  const probe = await probeAccel({ qemu: fakeQemu('echo "[0.0] Linux version 6.1"; sleep 60'), kernel: kernelOrSkip });
  if (probe.detail.includes('/dev/kvm')) return t.pass();
  t.deepEqual(probe, { domainType: 'kvm', detail: 'KVM' });
});

test('the cached probe answers without booting again until refreshed', async (t) => {
  const cacheFile = join(tempDir('devpivot-accel-cache-'), 'accel.json');
  const first = await probeAccelCached(cacheFile, {
    qemu: fakeQemu('echo "Linux version 6.1"; sleep 60'),
    kernel: kernelOrSkip,
  });
  if (first.detail.includes('/dev/kvm')) return t.pass();
  t.is(first.domainType, 'kvm');
  // Same qemu path with a different answer: the cache must still say kvm, a refresh must see the hang.
  const qemu = fakeQemu('sleep 60');
  const seeded = await probeAccelCached(cacheFile, { qemu, kernel: kernelOrSkip, refresh: true });
  t.is(seeded.domainType, 'qemu');
  const started = Date.now();
  const cached = await probeAccelCached(cacheFile, { qemu, kernel: kernelOrSkip });
  t.deepEqual(cached, seeded);
  t.true(Date.now() - started < 2000, 'a cache hit does not wait for the 5 s hang again');
  t.is(JSON.parse(readFileSync(cacheFile, 'utf8')).domainType, 'qemu');
});

// The remote probe is a shell script run over the qemu+ssh login; run here, on a host it can reach as root, it must
// reach the local probe's verdict (on a host whose /dev/kvm exists but aborts, both say TCG).
test("the remote probe script gives the local probe's answer on this host", async (t) => {
  const local = await probeAccel();
  const result = await run('sh', ['-c', REMOTE_ACCEL_SCRIPT], { timeoutMs: 30_000 });
  const remote = remoteAccelAnswer(result.code, result.all);
  t.truthy(remote, `the script proved nothing: exit ${result.code}: ${result.all}`);
  t.is(remote?.domainType, local.domainType, `local: ${local.detail}; script: ${result.all}`);
});

test("the remote probe's exit codes: 0 is KVM, 1 is TCG with the reason, 3 and ssh failures prove nothing", (t) => {
  t.deepEqual(remoteAccelAnswer(0, ''), { domainType: 'kvm', detail: 'KVM' });
  t.deepEqual(remoteAccelAnswer(1, 'x\n/dev/kvm does not exist\n'), {
    domainType: 'qemu',
    detail: 'TCG (KVM not usable: /dev/kvm does not exist)',
  });
  t.is(remoteAccelAnswer(3, '/dev/kvm is not accessible to this login'), undefined);
  t.is(remoteAccelAnswer(255, 'ssh: connect to host refused'), undefined);
  t.is(remoteAccelAnswer(null, 'timed out'), undefined);
});
