/**
 * The kernel the test guests boot directly: the host's Debian cloud kernel when there is one (the fixture's, see
 * images/README.md "Speed"), else the newest (src/vm/accel.ts findProbeKernel), copied next to their initramfs
 * where the unprivileged qemu user can read it; and the modules of a list that kernel has as files.
 * A module the kernel has built in (modules.builtin: Debian's cloud kernel builds in pvpanic and ext4) is left
 * out; a module neither built in nor present is an error naming it.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
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

/**
 * A busybox initramfs at `path`: the `modules` (full paths) under /modules, `/init` from `init(their file names)`,
 * and `files` (path in the archive → content, mode 0755). Renamed into place: another test file's guest may be
 * starting from the old one.
 */
export function writeInitramfs(
  path: string,
  modules: string[],
  init: (names: string[]) => string,
  files: Record<string, string> = {},
): void {
  const work = mkdtempSync(join(tmpdir(), 'devpivot-test-initrd-'));
  try {
    for (const sub of ['bin', 'dev', 'proc', 'sys', 'modules']) mkdirSync(join(work, sub));
    copyFileSync('/bin/busybox', join(work, 'bin/busybox'));
    chmodSync(join(work, 'bin/busybox'), 0o755);
    const names = modules.map((module) => basename(module));
    for (const [i, module] of modules.entries()) copyFileSync(module, join(work, 'modules', names[i]!));
    writeFileSync(join(work, 'init'), init(names), { mode: 0o755 });
    for (const [name, content] of Object.entries(files)) writeFileSync(join(work, name), content, { mode: 0o755 });
    const list = execFileSync('find', ['.', '-mindepth', '1'], { cwd: work, encoding: 'utf8' });
    const archive = execFileSync('cpio', ['-o', '-H', 'newc', '--quiet'], {
      cwd: work,
      input: list,
      maxBuffer: 64 << 20,
    });
    writeFileSync(`${path}.${process.pid}`, archive, { mode: 0o644 });
    renameSync(`${path}.${process.pid}`, path);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
