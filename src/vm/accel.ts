import { accessSync, constants, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { startProcess } from '../core/exec.js';

export interface AccelProbe {
  /** The libvirt domain type to use: 'kvm' when hardware virtualisation really works, else 'qemu' (TCG). */
  domainType: 'kvm' | 'qemu';
  /** Human summary: "KVM" or "TCG (KVM not usable: …)". */
  detail: string;
}

const KERNEL_BANNER = 'Linux version';

/** A kernel to boot for the probe: the host's newest /boot/vmlinuz-*. */
export function findProbeKernel(bootDir = '/boot'): string | undefined {
  try {
    const kernels = readdirSync(bootDir)
      .filter((name) => name.startsWith('vmlinuz-'))
      .sort()
      .reverse();
    for (const name of kernels) {
      const path = `${bootDir}/${name}`;
      try {
        accessSync(path, constants.R_OK);
        return path;
      } catch {}
    }
  } catch {}
  return undefined;
}

/**
 * Decide between KVM and TCG by booting a real kernel under KVM for a bounded time. `/dev/kvm` existing is not
 * enough: on nested or restricted hosts qemu starts, then hangs in the first guest instructions or aborts on an
 * MSR write. Seeing the kernel's first printk line proves the vCPU runs guest code.
 */
export async function probeAccel(
  options: { qemu?: string; kernel?: string; timeoutMs?: number } = {},
): Promise<AccelProbe> {
  const tcg = (reason: string): AccelProbe => ({ domainType: 'qemu', detail: `TCG (KVM not usable: ${reason})` });
  try {
    accessSync('/dev/kvm', constants.R_OK | constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return tcg(code === 'ENOENT' ? '/dev/kvm does not exist' : `/dev/kvm is not accessible (${code})`);
  }
  const kernel = options.kernel ?? findProbeKernel();
  if (!kernel) return tcg('no kernel in /boot to probe with; install linux-image-amd64');
  const outcome = await bootUntilBanner(options.qemu ?? 'qemu-system-x86_64', kernel, options.timeoutMs ?? 5000);
  return outcome === 'ok' ? { domainType: 'kvm', detail: 'KVM' } : tcg(outcome);
}

function bootUntilBanner(qemu: string, kernel: string, timeoutMs: number): Promise<string> {
  const args = ['-accel', 'kvm', '-machine', 'pc', '-nodefaults', '-no-user-config', '-display', 'none', '-m', '128'];
  args.push('-serial', 'stdio', '-no-reboot', '-kernel', kernel, '-append', 'console=ttyS0 earlyprintk=ttyS0 panic=-1');
  return new Promise((resolve) => {
    let output = '';
    let done = false;
    const finish = (result: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      resolve(result);
    };
    const child = startProcess(qemu, args, {
      onOutput: (text) => {
        output += text;
        if (output.includes(KERNEL_BANNER)) finish('ok');
      },
    });
    const timer = setTimeout(() => finish(`no guest output within ${timeoutMs / 1000} s under KVM`), timeoutMs);
    void child.exited.then(({ code, signal, spawnError }) => {
      if (spawnError) return finish(`cannot run ${qemu}: ${spawnError.message}`);
      const last =
        output
          .trim()
          .split('\n')
          .filter((line) => !line.includes('warning:'))
          .pop() ?? '';
      finish(`qemu exited (${signal ?? code}) under KVM${last ? `: ${last.slice(0, 160)}` : ''}`);
    });
  });
}

interface CachedProbe extends AccelProbe {
  key: string;
  at: number;
}

/** What invalidates a cached probe: a different qemu binary or kernel, or /dev/kvm coming or going. */
function probeKey(qemu: string, kernel: string | undefined): string {
  const stamp = (path: string) => {
    try {
      const stats = statSync(path);
      return `${stats.size}:${stats.mtimeMs}:${stats.rdev}`;
    } catch {
      return 'absent';
    }
  };
  const qemuPath = qemu.includes('/') ? qemu : `/usr/bin/${qemu}`;
  return [qemuPath, stamp(qemuPath), kernel ?? '', stamp('/dev/kvm')].join('|');
}

/**
 * `probeAccel` with its answer kept for a day in `cacheFile`: on hosts where KVM hangs, every fresh probe costs
 * its full timeout, which every run would otherwise pay before its first VM. `devpivot doctor` always probes
 * afresh and refreshes the cache.
 */
export async function probeAccelCached(
  cacheFile: string,
  options: { qemu?: string; kernel?: string; maxAgeMs?: number; refresh?: boolean } = {},
): Promise<AccelProbe> {
  const qemu = options.qemu ?? 'qemu-system-x86_64';
  const kernel = options.kernel ?? findProbeKernel();
  const key = probeKey(qemu, kernel);
  if (!options.refresh) {
    try {
      const cached = JSON.parse(readFileSync(cacheFile, 'utf8')) as CachedProbe;
      if (cached.key === key && Date.now() - cached.at < (options.maxAgeMs ?? 86_400_000)) {
        return { domainType: cached.domainType, detail: cached.detail };
      }
    } catch {}
  }
  const probe = await probeAccel({ qemu, ...(kernel ? { kernel } : {}) });
  try {
    mkdirSync(dirname(cacheFile), { recursive: true });
    writeFileSync(cacheFile, `${JSON.stringify({ ...probe, key, at: Date.now() } satisfies CachedProbe)}\n`);
  } catch {} // a read-only state directory only costs the next run another probe
  return probe;
}

/**
 * The same probe as `probeAccel`, as one POSIX shell script for a remote libvirt host (run over the URI's own ssh
 * login): boot the host's newest /boot/vmlinuz-* under KVM for 5 s and look for the kernel banner. Exit 0: KVM
 * works; 1: it does not (the last line says why); 3: this login cannot open /dev/kvm, so nothing is proven (QEMU
 * under qemu:///system runs as another user) and the caller falls back to libvirt's capabilities.
 */
export const REMOTE_ACCEL_SCRIPT = [
  '[ -e /dev/kvm ] || { echo "/dev/kvm does not exist"; exit 1; }',
  '[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo "/dev/kvm is not accessible to this login"; exit 3; }',
  'k=$(ls /boot/vmlinuz-* 2>/dev/null | sort -r | head -n 1)',
  '[ -n "$k" ] || { echo "no kernel in /boot to probe with"; exit 3; }',
  `timeout 5 qemu-system-x86_64 -accel kvm -machine pc -nodefaults -no-user-config -display none -m 128 -serial stdio -no-reboot -kernel "$k" -append "console=ttyS0 earlyprintk=ttyS0 panic=-1" 2>&1 | grep -m 1 -q "${KERNEL_BANNER}" && exit 0`,
  'echo "no guest output within 5 s under KVM (or qemu exited)"; exit 1',
].join('\n');

/** The probe's answer from `REMOTE_ACCEL_SCRIPT`'s exit code and output; undefined where nothing was proven. */
export function remoteAccelAnswer(code: number | null, output: string): AccelProbe | undefined {
  if (code === 0) return { domainType: 'kvm', detail: 'KVM' };
  if (code !== 1) return undefined;
  const reason = output.trim().split('\n').pop() ?? 'the probe failed';
  return { domainType: 'qemu', detail: `TCG (KVM not usable: ${reason})` };
}
