/**
 * A tiny, honest test guest for the VM layer: the host's Debian kernel booted directly with a busybox initramfs
 * whose /init prints markers on the serial console, reads the Ignition config from fw_cfg, checks the virtio
 * disk (the qcow2 overlay), writes a boot counter to it and reboots itself once (or, with devpivot.test=poweroff
 * or devpivot.test=panic on the kernel command line, powers off or panics). Built without loop devices or
 * mounts; files are placed where the unprivileged qemu user can read them.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { guestKernel, writeInitramfs } from './guest-kernel.js';

export const GUEST_DIR = '/var/lib/libvirt/images/devpivot-test/vm';

const MODULES = [
  'drivers/virtio/virtio_ring.ko',
  'drivers/virtio/virtio.ko',
  'drivers/virtio/virtio_pci_legacy_dev.ko',
  'drivers/virtio/virtio_pci_modern_dev.ko',
  'drivers/virtio/virtio_pci.ko',
  'drivers/block/virtio_blk.ko',
  'drivers/firmware/qemu_fw_cfg.ko',
  'drivers/misc/pvpanic/pvpanic.ko',
  'drivers/misc/pvpanic/pvpanic-mmio.ko',
];

/** /init, loading `modules` (file names under /modules) in order. */
const init = (modules: string[]) => `#!/bin/busybox sh
B=/bin/busybox
$B mount -t devtmpfs dev /dev
exec 0</dev/console 1>/dev/console 2>&1
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
echo "devpivot-test: init started"
for m in ${modules.join(' ')}; do $B insmod /modules/$m; done
CFG=/sys/firmware/qemu_fw_cfg/by_name/opt/com.coreos/config/raw
if [ -r $CFG ]; then echo "devpivot-test: ignition $($B cat $CFG)"; else echo "devpivot-test: no ignition"; fi
# devpivot.test=poweroff|panic on the kernel command line: end the boot that way instead
case "$($B cat /proc/cmdline)" in
  *devpivot.test=poweroff*) echo "devpivot-test: powering off"; $B poweroff -f ;;
  *devpivot.test=panic*) echo "devpivot-test: panicking"; echo c > /proc/sysrq-trigger ;;
esac
i=0; while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do $B sleep 0.1; i=$((i+1)); done
if [ ! -b /dev/vda ]; then echo "devpivot-test: no disk"; $B sleep 3600; fi
MARK=$($B dd if=/dev/vda bs=16 count=1 2>/dev/null | $B tr -d '\\000')
if [ "$MARK" = "devpivot-boot-1" ]; then
  echo "devpivot-test: second boot"
  (n=0; while true; do $B sleep 2; n=$((n+1)); echo "devpivot-test: tick $n"; done) &
  exec $B sh
fi
printf 'devpivot-boot-1' | $B dd of=/dev/vda bs=16 count=1 conv=notrunc,fsync 2>/dev/null
$B sync
echo "devpivot-test: rebooting"
$B reboot -f
`;

export interface TestGuest {
  kernel: string;
  initrd: string;
  cmdline: string;
  /** An empty 16 MiB qcow2 base image (the overlay's backing file). */
  baseImage: string;
  dir: string;
}

/** Build (once per process) the kernel/initramfs pair and a base qcow2 into `dir`. */
export function buildTestGuest(dir = GUEST_DIR): TestGuest {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const { kernel, modules } = guestKernel(dir, MODULES);
  const initrd = join(dir, 'initrd.cpio');
  const baseImage = join(dir, 'base.qcow2');
  chmodSync(kernel, 0o644);
  writeInitramfs(initrd, modules, init);
  if (!existsSync(baseImage)) execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '16M']);
  chmodSync(baseImage, 0o644);
  return { kernel, initrd, cmdline: 'console=ttyS0 panic=-1', baseImage, dir };
}
