/**
 * The fixture OS under real libvirtd (TCG), with devpivot's legacy Ignition, outside devpivot's CLI: pivot's
 * comparison with the boot image's own origin, a registry the guest does not trust, an Ignition config it cannot
 * use. Power loss around the bootloader swap is in fixture-power-loss.vm.test.ts. What the end-to-end scenarios
 * check is not repeated here: the first boot and pivot line by line (e2e/kernel-args), UEFI and ssh
 * (e2e/mirror), the node that does not reboot (e2e/power-loss), a corrupted layer
 * (e2e/corrupt-oscontainer), power loss with the fixes off (its no-boot-fixes node). The three tests boot a VM each,
 * side by side (the first one's 15 s of watching for a pull that must not come overlaps the others' boots); the
 * domains are destroyed by exact name in `finally`.
 */
import test from 'ava';
import {
  BOOT_S,
  booted,
  bootImage,
  glog,
  ignitionFor,
  PIVOT_S,
  useFixtureRegistry,
  withVm,
} from './fixture-vm-common.js';

const ctx = useFixtureRegistry(test, ['2']);

test('a pullspec equal to the booted origin: "Already at target pivot", no pull, no reboot', async (t) => {
  await withVm(t, ctx, ignitionFor(ctx, bootImage(ctx)), async (vm) => {
    await vm.start();
    await vm.waitFor(glog('I', 'root.go:415', 'Already at target pivot; exiting\\.\\.\\.$'), PIVOT_S);
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const lines = await vm.lines();
    t.false(lines.some((line) => /Running: podman pull/.test(line)));
    t.false(lines.some((line) => /Running: systemctl reboot/.test(line)));
    t.is(booted(await vm.reports()).length, 1);
  });
});

test('without a registries.conf.d drop-in the plain-HTTP registry is refused (TLS is not skipped)', async (t) => {
  await withVm(t, ctx, ignitionFor(ctx, ctx.pinned['2']!, { trust: false }), async (vm) => {
    await vm.start();
    const error = await vm.waitFor(/pivot\[\d+\]: Error: /, PIVOT_S);
    t.regex(error.line, /HTTP response to HTTPS client/);
    await vm.waitFor(glog('W', 'run.go:40', 'podman failed: exit status 125; retrying\\.\\.\\.$'), 30_000, error.index);
  });
});

test('an Ignition config the guest cannot use stops the first boot as RHCOS does', async (t) => {
  await withVm(t, ctx, '{"ignition":{"version":"9.9.0"}}', async (vm) => {
    await vm.start();
    const failed = await vm.waitFor(/^Ignition has failed/, BOOT_S);
    await vm.waitFor(/^You are in emergency mode/, BOOT_S, failed.index);
    const lines = await vm.lines();
    t.true(lines.some((line) => /^\[FAILED\] Failed to start ignition-fetch\.service/.test(line)));
    t.true(
      lines.some((line) => /^ignition: CRITICAL : Ignition failed: unsupported config version/.test(line)),
      'the Ignition error is shown',
    );
    t.false(
      lines.some((line) => /systemd\[1\]/.test(line)),
      'the root is never started',
    );
  });
});
