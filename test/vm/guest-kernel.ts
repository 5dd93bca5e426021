/**
 * The kernel the test guests boot directly: the host's Debian cloud kernel when there is one (the fixture's, see
 * images/README.md "Speed"), else the newest (src/vm/accel.ts findProbeKernel), copied next to their initramfs
 * where the unprivileged qemu user can read it; and the modules of a list that kernel has as files.
 * A module the kernel has built in (modules.builtin: Debian's cloud kernel builds in pvpanic and ext4) is left
 * out; a module neither built in nor present is an error naming it.
 */
import { copyFileSync, existsSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { findProbeKernel } from '../../src/vm/accel.js';

export interface GuestKernel {
  /** The copy in the guest's directory. */
  kernel: string;
  release: string;
  /** Of `modules` (paths under /lib/modules/<release>/kernel/), those to insmod, in order. */
  modules: string[];
}

export function guestKernel(dir: string, modules: readonly string[]): GuestKernel {
  const cloud = readdirSync('/boot')
    .filter((name) => /^vmlinuz-.*-cloud-amd64$/.test(name))
    .sort((a, b) => b.localeCompare(a, 'en', { numeric: true }))[0];
  const source = cloud ? `/boot/${cloud}` : findProbeKernel();
  if (!source) throw new Error('no kernel in /boot: install linux-image-cloud-amd64');
  const release = source.replace(/^.*vmlinuz-/, '');
  const kernel = join(dir, 'vmlinuz');
  // Copied every time (the host's kernel may have changed since the last build) and renamed into place: another
  // test file's guest may be starting from the old copy.
  const partial = `${kernel}.${process.pid}`;
  copyFileSync(source, partial);
  renameSync(partial, kernel);
  const root = `/lib/modules/${release}`;
  const builtin = new Set(
    existsSync(`${root}/modules.builtin`) ? readFileSync(`${root}/modules.builtin`, 'utf8').split('\n') : [],
  );
  const files = modules.filter((module) => {
    if (existsSync(`${root}/kernel/${module}`)) return true;
    if (builtin.has(`kernel/${module}`)) return false;
    throw new Error(`kernel ${release} has no module ${module} (neither a file under ${root}/kernel nor built in)`);
  });
  return { kernel, release, modules: files.map((module) => `${root}/kernel/${module}`) };
}
