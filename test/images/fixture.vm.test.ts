/**
 * The fixture OS under real libvirtd (TCG): first-boot Ignition from fw_cfg, the legacy pivot from devpivot's own
 * registry on loopback, an image of the booted commit, a corrupted layer, and power loss right after the
 * deployment is staged (with both fixes, with one, with none). About 4 minutes in all on an idle host; the domains
 * are destroyed by exact name in `finally`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { generateIgnition, serializeIgnition } from '../../src/ignition/index.js';
import { type Fixture, loadFixture } from '../../src/images/fixture.js';
import { buildOscontainer, pushOscontainer } from '../../src/oscontainer/index.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/index.js';
import { FixtureVm, type ReportLine } from '../helpers/fixture-vm.js';

const BOOT_S = 120_000;
const PIVOT_S = 180_000;

let fixture: Fixture;
let registry: RunningRegistry;
let storage: string;
/** Image references as the guest reaches them (10.0.2.2 = host loopback). */
const pinned: Record<string, string> = {};

test.before(async () => {
  fixture = await loadFixture();
  storage = await mkdtemp(join(tmpdir(), 'devpivot-images-vm-'));
  registry = await startRegistry({ storage });
  for (const entry of fixture.versions) {
    const image = await buildOscontainer({ repo: fixture.repo, commit: entry.commit });
    try {
      const pushed = await pushOscontainer(image, `${registry.address}/fixture/os:v${entry.version}`);
      pinned[entry.version] = `10.0.2.2:${registry.port}/fixture/os@${pushed.digest}`;
    } finally {
      await image.dispose();
    }
  }
});

test.after.always(async () => {
  await registry?.stop();
  if (storage) await rm(storage, { recursive: true, force: true });
});

function ignitionFor(
  target: string,
  files: Array<{ path: string; text: string }> = [],
  kernelArgs: string[] = [],
): string {
  const extra = {
    ignition: { version: '3.3.0' },
    storage: {
      files: files.map((file) => ({
        path: file.path,
        mode: 0o644,
        contents: { source: `data:,${encodeURIComponent(file.text)}` },
      })),
    },
  };
  return serializeIgnition(
    generateIgnition({
      driver: 'legacy',
      image: target,
      spec: '3.3.0',
      registry: { hostPort: `10.0.2.2:${registry.port}`, insecure: true },
      kernelArgs,
      extra,
    }),
  );
}

function commitOf(version: string): string {
  return fixture.versions.find((entry) => entry.version === version)!.commit;
}

function only<T extends ReportLine>(reports: T[], event: string): T[] {
  return reports.filter((report) => report.event === event);
}

test.serial(
  'first boot runs Ignition; pivot to version 2 over the loopback registry; the new boot skips',
  async (t) => {
    const marker = `devpivot-images-test-${process.pid}-${Date.now()}`;
    const target = pinned['2']!;
    const vm = await FixtureVm.create(
      fixture.disk,
      ignitionFor(
        target,
        [{ path: '/etc/issue', text: `${marker}\n` }],
        ['ADD:fixture.test-karg=1', 'DELETE:ignition.platform.id=qemu'],
      ),
    );
    try {
      await vm.start();
      const init = await vm.waitFor(/^fixture-initramfs: started/, BOOT_S);
      t.log(`first init line after ${init.seconds.toFixed(1)} s`);
      const ignition = await vm.waitFor(/^Ignition finished successfully$/, BOOT_S, init.index);
      const booted1 = await vm.waitFor(/devpivot-report: \{"event":"booted"/, BOOT_S, ignition.index);
      t.log(`booted version 1 after ${booted1.seconds.toFixed(1)} s`);
      // The file Ignition wrote into /etc is in the booted system: the init shows /etc/issue like a getty.
      await vm.waitFor(new RegExp(`^issue: ${marker}$`), BOOT_S, booted1.index);
      await vm.waitFor(/"event":"pivot","phase":"pulling"/, BOOT_S, booted1.index);
      const pivoting = await vm.waitFor(/^pivot: Pivoting to: /, PIVOT_S, booted1.index);
      t.is(pivoting.line, `pivot: Pivoting to: 2 (${commitOf('2')})`);
      const rebooting = await vm.waitFor(/"event":"pivot","phase":"rebooting"/, PIVOT_S, pivoting.index);
      const booted2 = await vm.waitFor(/devpivot-report: \{"event":"booted"/, BOOT_S, rebooting.index);
      t.log(`pivot v1 -> v2: pulling at ${booted1.seconds.toFixed(1)} s, booted v2 at ${booted2.seconds.toFixed(1)} s`);
      await vm.waitFor(new RegExp(`^issue: ${marker}$`), BOOT_S, booted2.index);
      const skipped = await vm.waitFor(/^pivot: Already at target pivot; exiting\.\.\.$/, PIVOT_S, booted2.index);
      await vm.waitFor(/^fixture-init: ready$/, BOOT_S, skipped.index);

      // /etc/pivot/kernel-args applied to the new deployment: the kernel prints its command line at boot.
      const cmdlines = (await vm.lines()).filter((line) => /\] Command line: /.test(line));
      t.is(cmdlines.length, 2);
      t.false(cmdlines[0]!.includes('fixture.test-karg=1'));
      t.true(cmdlines[0]!.includes(' ignition.platform.id=qemu'));
      t.true(cmdlines[1]!.includes(' fixture.test-karg=1'), cmdlines[1]);
      t.false(cmdlines[1]!.includes('ignition.platform.id=qemu'), cmdlines[1]);

      const reports = await vm.reports();
      t.deepEqual(only(reports, 'ignition'), [{ event: 'ignition', ok: true }], 'Ignition runs on the first boot only');
      const boots = only(reports, 'booted');
      t.is(boots.length, 2);
      t.like(boots[0], { version: '1', commit: commitOf('1') });
      t.like(boots[1], { version: '2', commit: commitOf('2') });
      for (const boot of boots) t.regex(String(boot.bootId), /^[0-9a-f-]{36}$/);
      t.not(boots[0]!.bootId, boots[1]!.bootId);
      t.deepEqual(
        only(reports, 'pivot').map((report) => report.phase),
        ['pulling', 'staging', 'staged', 'rebooting'],
      );
      for (const report of only(reports, 'pivot')) t.is(report.target, target);
      t.deepEqual(only(reports, 'pivot-skipped'), [
        { event: 'pivot-skipped', target, reason: `already at target ${commitOf('2')}` },
      ]);
      t.deepEqual(only(reports, 'failed'), []);
    } finally {
      await vm.dispose();
    }
  },
);

test.serial('a corrupted layer fails the pivot: a failed report, no reboot, version 1 stays', async (t) => {
  const vm = await FixtureVm.create(fixture.disk, ignitionFor(pinned['3']!));
  registry.faults.corruptBlobs = true;
  try {
    await vm.start();
    const failed = await vm.waitFor(/devpivot-report: \{"event":"failed"/, PIVOT_S);
    t.log(failed.line);
    await vm.waitFor(/^fixture-init: ready$/, BOOT_S, failed.index);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const reports = await vm.reports();
    t.deepEqual(
      only(reports, 'booted').map((report) => report.version),
      ['1'],
    );
    t.deepEqual(
      only(reports, 'pivot').map((report) => report.phase),
      ['pulling'],
    );
    t.regex(
      String(only(reports, 'failed')[0]!.reason),
      /^pull failed: .*Digest did not match, expected sha256:[0-9a-f]{64}/,
    );
  } finally {
    registry.faults.corruptBlobs = false;
    await vm.dispose();
  }
});

test.serial('an image of the booted commit is pulled, recognised by its label and skipped', async (t) => {
  const target = pinned['1']!;
  const vm = await FixtureVm.create(fixture.disk, ignitionFor(target));
  try {
    await vm.start();
    const skipped = await vm.waitFor(/^pivot: Already at target pivot; exiting\.\.\.$/, PIVOT_S);
    await vm.waitFor(/^fixture-init: ready$/, BOOT_S, skipped.index);
    const reports = await vm.reports();
    t.deepEqual(
      only(reports, 'pivot').map((report) => report.phase),
      ['pulling'],
    );
    t.deepEqual(only(reports, 'pivot-skipped'), [
      { event: 'pivot-skipped', target, reason: `already at target ${commitOf('1')}` },
    ]);
    t.is(only(reports, 'booted').length, 1);
  } finally {
    await vm.dispose();
  }
});

test.serial('an Ignition config the guest cannot use stops the first boot as RHCOS does', async (t) => {
  const vm = await FixtureVm.create(fixture.disk, '{"ignition":{"version":"9.9.0"}}');
  try {
    await vm.start();
    const failed = await vm.waitFor(/^Ignition has failed/, BOOT_S);
    await vm.waitFor(/^You are in emergency mode/, BOOT_S, failed.index);
    const reports = await vm.reports();
    t.deepEqual(only(reports, 'ignition'), [{ event: 'ignition', ok: false }]);
    t.deepEqual(only(reports, 'booted'), [], 'the root is never started');
    t.true(
      (await vm.lines()).some((line) => /^ignition: CRITICAL : Ignition failed: unsupported config version/.test(line)),
      'the Ignition error is shown',
    );
  } finally {
    await vm.dispose();
  }
});

test.serial(
  'without a registries.conf.d drop-in the plain-HTTP registry is refused (TLS is not skipped)',
  async (t) => {
    const target = pinned['2']!;
    const config = generateIgnition({ driver: 'legacy', image: target, spec: '3.3.0' });
    const vm = await FixtureVm.create(fixture.disk, serializeIgnition(config));
    try {
      await vm.start();
      const failed = await vm.waitFor(/devpivot-report: \{"event":"failed"/, PIVOT_S);
      const reports = await vm.reports();
      t.regex(String(only(reports, 'failed')[0]!.reason), /^pull failed: .*HTTP response to HTTPS client/);
      await vm.waitFor(/^fixture-init: ready$/, BOOT_S, failed.index);
      t.deepEqual(
        only(reports, 'booted').map((report) => report.version),
        ['1'],
      );
    } finally {
      await vm.dispose();
    }
  },
);

/** Pivot to version 2, cut the power as soon as the deployment is staged, boot again on the same disk. */
async function powerLossAfterStaged(vm: FixtureVm) {
  await vm.start();
  const staged = await vm.waitFor(/"event":"pivot","phase":"staged"/, PIVOT_S);
  await vm.destroy();
  const cutAt = staged.seconds;
  await vm.start();
  const outcome = await vm.waitFor(
    /devpivot-report: \{"event":"booted"|You are in emergency mode|Kernel panic|^error: |Minimal BASH-like/,
    BOOT_S,
  );
  return { cutAt, outcome: outcome.line, reports: await vm.reports() };
}

test.serial('power loss right after staging boots version 1 or 2, never a brick', async (t) => {
  const vm = await FixtureVm.create(fixture.disk, ignitionFor(pinned['2']!));
  try {
    const { cutAt, outcome, reports } = await powerLossAfterStaged(vm);
    t.log(`power cut ${cutAt.toFixed(1)} s after start; next boot: ${outcome}`);
    const boots = only(reports, 'booted');
    t.is(boots.length, 1, outcome);
    t.true([commitOf('1'), commitOf('2')].includes(String(boots[0]!.commit)), `booted ${JSON.stringify(boots[0])}`);
  } finally {
    await vm.dispose();
  }
});

test.serial('with the boot fixes off, power loss after staging reproduces ostreedev/ostree#3392', async (t) => {
  const vm = await FixtureVm.create(
    fixture.disk,
    ignitionFor(pinned['2']!, [{ path: '/etc/fixture/no-boot-fixes', text: 'ostreedev/ostree#3392\n' }]),
  );
  try {
    const { cutAt, outcome } = await powerLossAfterStaged(vm);
    t.log(`power cut ${cutAt.toFixed(1)} s after start; next boot: ${outcome}`);
    t.regex(outcome, /You are in emergency mode.*does not resolve to a deployment.*3392/);
  } finally {
    await vm.dispose();
  }
});

test.serial('with only the /boot checkpoint off, the initramfs falls back to the newest BLS entry', async (t) => {
  const vm = await FixtureVm.create(
    fixture.disk,
    ignitionFor(pinned['2']!, [{ path: '/etc/fixture/no-boot-fixes', text: 'fsfreeze\n' }]),
  );
  try {
    const { cutAt, outcome, reports } = await powerLossAfterStaged(vm);
    t.log(`power cut ${cutAt.toFixed(1)} s after start; next boot: ${outcome}`);
    const lines = await vm.lines();
    t.true(
      lines.some((line) =>
        /^fixture-initramfs: warning: ostree=\S+ does not resolve \(ostreedev\/ostree#3392\)/.test(line),
      ),
      'the fallback was needed: the #3392 state was reached',
    );
    t.like(only(reports, 'booted')[0], { version: '2', commit: commitOf('2') });
  } finally {
    await vm.dispose();
  }
});
