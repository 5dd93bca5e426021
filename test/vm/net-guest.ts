/**
 * A test guest with a network: the host's Debian kernel booted directly with a busybox initramfs that brings up
 * the virtio NIC as the fixture does (10.0.2.15/24 via 10.0.2.2, no DHCP), serves a one-line "ssh" banner on
 * port 22 (busybox nc; the first line it reads back lands in /tmp/ssh-done), then runs the shell script it finds in fw_cfg `opt/com.coreos/config` (the node's
 * "Ignition") and prints `net-guest: done` before powering off. Its lines start with `net-guest:`.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { GUEST_DIR } from './guest.js';
import { guestKernel, writeInitramfs } from './guest-kernel.js';

const MODULES = [
  'drivers/virtio/virtio_ring.ko',
  'drivers/virtio/virtio.ko',
  'drivers/virtio/virtio_pci_legacy_dev.ko',
  'drivers/virtio/virtio_pci_modern_dev.ko',
  'drivers/virtio/virtio_pci.ko',
  'net/core/failover.ko',
  'drivers/net/net_failover.ko',
  'drivers/net/virtio_net.ko',
  'drivers/firmware/qemu_fw_cfg.ko',
];

/** /init, loading `modules` (file names under /modules) in order. */
const init = (modules: string[]) => `#!/bin/busybox sh
B=/bin/busybox
$B mount -t devtmpfs dev /dev
exec 0</dev/console 1>/dev/console 2>&1
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
$B mkdir -p /tmp
for m in ${modules.join(' ')}; do $B insmod /modules/$m; done
i=0; while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do $B sleep 0.1; i=$((i+1)); done
$B ip link set lo up
$B ip link set eth0 up
$B ip addr add 10.0.2.15/24 dev eth0
$B ip route add default via 10.0.2.2
$B nc -ll -p 22 -e /bin/banner &
echo "net-guest: network up"
CFG=/sys/firmware/qemu_fw_cfg/by_name/opt/com.coreos/config/raw
i=0; while [ ! -r $CFG ] && [ $i -lt 50 ]; do $B sleep 0.1; i=$((i+1)); done
if [ -r $CFG ]; then $B cat $CFG > /script.sh; $B sh /script.sh; else echo "net-guest: no script"; fi
echo "net-guest: done"
$B poweroff -f
`;

const BANNER = `#!/bin/busybox sh
echo "SSH-2.0-net-guest"
read line
echo "$line" > /tmp/ssh-done
`;

export interface NetGuest {
  kernel: string;
  initrd: string;
  cmdline: string;
  /** An empty 16 MiB qcow2 base image. */
  baseImage: string;
}

/** Build (once per process) the kernel/initramfs pair into `dir`. */
export function buildNetGuest(dir = join(GUEST_DIR, 'net')): NetGuest {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const { kernel, modules } = guestKernel(dir, MODULES);
  const initrd = join(dir, 'initrd.cpio');
  const baseImage = join(dir, 'base.qcow2');
  chmodSync(kernel, 0o644);
  writeInitramfs(initrd, modules, init, { 'bin/banner': BANNER });
  if (!existsSync(baseImage)) execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', baseImage, '16M']);
  chmodSync(baseImage, 0o644);
  return { kernel, initrd, cmdline: 'console=ttyS0 panic=-1 quiet', baseImage };
}
