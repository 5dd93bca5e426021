/**
 * `build: { fixture: N, kernel: unsigned }`: the fixture version with its kernel's Authenticode signature removed
 * (`sbattach --remove`, sbsigntool), as a rootfs the oscontainer builder commits. The image is otherwise the same, so
 * a node under Secure Boot pulls, stages and reboots into it, and then shim's verifier in GRUB refuses the kernel
 * (engine/secure-boot.ts): the failure of a new image whose kernel was not signed.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DevpivotError } from '../core/errors.js';
import { run } from '../core/exec.js';

export interface UnsignedRootfs {
  rootfs: string;
  /** Removes the checkout. */
  remove(): Promise<void>;
}

async function must(file: string, args: string[], what: string, hint: string, signal?: AbortSignal): Promise<void> {
  const result = await run(file, args, { timeoutMs: 300_000, signal });
  signal?.throwIfAborted();
  if (result.code === 0) return;
  throw new DevpivotError(
    result.spawnError?.code === 'ENOENT' ? 'TOOL_MISSING' : 'OSTREE_FAILED',
    `${what}: ${result.spawnError?.message ?? (result.stderr.trim() || `exit ${result.code}`)}`,
    { hint, exitCode: 2 },
  );
}

/**
 * A checkout of `commit` of `repo` under `parent`, each /usr/lib/modules/<v>/vmlinuz without its signature. `signal`
 * (prepare's) ends a running ostree or sbattach at once; the checkout is removed.
 */
export async function unsignedKernelRootfs(
  repo: string,
  commit: string,
  parent: string,
  signal?: AbortSignal,
): Promise<UnsignedRootfs> {
  const dir = await mkdtemp(join(parent, 'unsigned-kernel-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const rootfs = join(dir, 'rootfs');
    // As root the checkout keeps the commit's owners; otherwise every file is the caller's (user mode).
    const user = process.getuid?.() === 0 ? [] : ['--user-mode'];
    await must(
      'ostree',
      [`--repo=${repo}`, 'checkout', ...user, commit, rootfs],
      'ostree checkout',
      'is ostree installed?',
      signal,
    );
    const modules = join(rootfs, 'usr/lib/modules');
    const kernels = (await readdir(modules)).map((version) => join(modules, version, 'vmlinuz'));
    if (kernels.length === 0) throw new DevpivotError('FIXTURE_NO_KERNEL', `no kernel in ${modules} of ${commit}`);
    for (const kernel of kernels)
      await must('sbattach', ['--remove', kernel], `sbattach --remove ${kernel}`, 'apt-get install sbsigntool', signal);
    return { rootfs, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}
