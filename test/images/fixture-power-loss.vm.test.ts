/**
 * Power loss around the fixture OS's pivot (real libvirtd, TCG, devpivot's legacy Ignition): after
 * ostree-finalize-staged swapped the bootloader with both ostreedev/ostree#3392 fixes on and with only the initramfs
 * fallback. Power loss with the deployment staged and not finalized is checked by e2e/power-loss (twice on one node:
 * while staging, and with v2 staged in full). With both fixes off the node reproduces #3392: the no-boot-fixes node
 * of e2e/corrupt-oscontainer checks that. Split from fixture.vm.test.ts so that the two VM workers are balanced. The
 * two tests run side by side; the domains are destroyed by exact name in `finally`.
 */
import test from 'ava';
import type { FixtureVm } from '../helpers/fixture-vm.js';
import { BOOT_S, booted, commitOf, ignitionFor, PIVOT_S, useFixtureRegistry, withVm } from './fixture-vm-common.js';

const ctx = useFixtureRegistry(test, ['2']);

/** A unit that is slow to stop after ostree-finalize-staged.service (stop order is the reverse of Before=). */
const SLOW_STOP = {
  name: 'devpivot-test-slow-stop.service',
  enabled: true,
  contents: [
    '[Unit]',
    'Description=devpivot test: keep the shutdown going after the staged deployment is written',
    // No default dependencies (After=basic.target): ostree-finalize-staged.service is Before=basic.target, so that
    // would be an ordering cycle, which systemd breaks at shutdown by dropping a stop job, sometimes finalize's.
    'DefaultDependencies=no',
    'After=local-fs.target',
    'Conflicts=shutdown.target',
    'Before=ostree-finalize-staged.service shutdown.target',
    'RequiresMountsFor=/boot',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    'ExecStart=/bin/true',
    'ExecStop=/bin/sleep 120',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n'),
};

const PATH_RACE = 'ostree-finalize-staged.service never ran before the reboot';

/**
 * `withVm` with one more try, on a new VM, when the first lost ostree 2022.7's path-unit race (above): the window
 * these tests need was never opened. Any other failure, or the race twice, fails the test.
 */
async function withVmPastFinalizeRace(
  t: { log: (s: string) => void },
  ignition: string,
  body: (vm: FixtureVm) => Promise<void>,
): Promise<void> {
  try {
    await withVm(t, ctx, ignition, body);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.includes(PATH_RACE)) throw error;
    t.log(`first VM: ${error.message}; once more on a new VM`);
    await withVm(t, ctx, ignition, body);
  }
}

/** Pivot to v2, cut the power after finalize-staged swapped /boot/loader (before /boot is unmounted), boot again. */
async function powerLossAfterSwap(vm: FixtureVm) {
  await vm.start();
  const staged = await vm.waitFor(/pivot\[\d+\]: Staging deployment\.\.\.done/, PIVOT_S + 120_000);
  // The swap is on disk once the checkpoint ExecStop said so (or skipped it), or systemd's status line says the
  // unit stopped (its name cut to fit 80 columns, as on RHCOS). Two triggers: a kernel or journal line written at
  // the same moment can split either one on the serial console, and a missed trigger lets the shutdown finish.
  const finalized = await vm.waitFor(
    /Stopped ostree-finalize-st(?!.*Monitor)|^fixture-boot-checkpoint: |Failed to stop ostree-finalize-st|Booting `/,
    PIVOT_S,
    staged.index,
  );
  if (!/^fixture-boot-checkpoint: |Stopped/.test(finalized.line)) {
    const lines = await vm.lines();
    // Nothing was finalized and v1 boots again (images/README.md "Staged deployments": seen with an ordering cycle
    // in SLOW_STOP, since fixed; the path unit losing to pivot's reboot is not ruled out). That is not the window
    // these tests cut the power in: say so, so the test runs once more.
    const serviceRan = lines.some((line) =>
      /ostree-finalize-staged\.service|OSTree Finalize Staged Deployment/.test(line),
    );
    throw new Error(
      `the shutdown went on without the bootloader swap being seen: ${finalized.line}${serviceRan ? '' : ` (${PATH_RACE})`}`,
    );
  }
  await vm.destroy();
  await vm.start();
  const outcome = await vm.waitFor(
    /devpivot-report: \{"event":"booted"|You are in emergency mode|Kernel panic|^error: |Minimal BASH-like/,
    BOOT_S,
  );
  return { cutAt: finalized.seconds, outcome: outcome.line, reports: await vm.reports(), lines: await vm.lines() };
}

test('power loss after the bootloader swap, fixes on: the /boot checkpoint makes v2 boot', async (t) => {
  await withVmPastFinalizeRace(t, ignitionFor(ctx, ctx.pinned['2']!, { units: [SLOW_STOP] }), async (vm) => {
    const { cutAt, outcome, reports } = await powerLossAfterSwap(vm);
    t.log(`power cut ${cutAt.toFixed(1)} s after start; next boot: ${outcome}`);
    t.like(booted(reports)[0], { version: '2', commit: commitOf(ctx, '2') });
  });
});

test('with only the /boot checkpoint off, the initramfs falls back to the newest BLS entry', async (t) => {
  const ignition = ignitionFor(ctx, ctx.pinned['2']!, {
    units: [SLOW_STOP],
    files: [{ path: '/etc/fixture/no-boot-fixes', text: 'fsfreeze\n' }],
  });
  await withVmPastFinalizeRace(t, ignition, async (vm) => {
    const { cutAt, outcome, reports, lines } = await powerLossAfterSwap(vm);
    t.log(`power cut ${cutAt.toFixed(1)} s after start; next boot: ${outcome}`);
    t.true(
      lines.some((line) =>
        /^fixture-initramfs: warning: ostree=\S+ does not resolve \(ostreedev\/ostree#3392\)/.test(line),
      ),
      'the fallback was needed: the #3392 state was reached',
    );
    t.like(booted(reports)[0], { version: '2', commit: commitOf(ctx, '2') });
  });
});
