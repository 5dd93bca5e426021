/**
 * What `devpivot doctor` checks on this machine: each requirement, whether it is met, and how to meet it.
 * (Its own layer: it asks the VM layer how KVM behaves, which core may not.)
 */

import { existsSync, statfsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { run } from '../core/exec.js';
import { fixtureState } from '../fixture/fixture.js';
import { probeAccelCached } from '../vm/accel.js';
import { OVMF_SECURE, SWTPM_FILES } from '../vm/domain-xml.js';

/** One row of `devpivot doctor`. `required: false` rows inform but never fail the check. */
export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  fix: string;
  required: boolean;
}

export interface CheckContext {
  uri: string;
  stateDir: string;
  /** The environment the run would have (DEVPIVOT_CACHE_DIR, DEVPIVOT_SHARED_CACHE_DIR; default process.env). */
  env?: NodeJS.ProcessEnv;
}

type Check = (context: CheckContext) => Promise<CheckResult>;

const APT = 'apt-get install -y';
const MIN_FREE_BYTES = 4 * 1024 ** 3;

function firstLine(text: string): string {
  return text.trim().split('\n')[0] ?? '';
}

/** A program that answers `--version`: present and runnable. */
function program(name: string, file: string, args: string[], pkg: string): Check {
  return async () => {
    const result = await run(file, args, { timeoutMs: 10_000 });
    const ok = result.code === 0;
    const detail = ok
      ? firstLine(result.stdout || result.stderr)
      : result.spawnError?.code === 'ENOENT'
        ? `${file} not found`
        : `${file} ${args.join(' ')} failed: ${firstLine(result.stderr) || `exit ${result.code}`}`;
    return { name, ok, detail, fix: ok ? '' : `${APT} ${pkg}`, required: true };
  };
}

export const checkLibvirt: Check = async ({ uri }) => {
  const result = await run('virsh', ['-c', uri, 'version'], { timeoutMs: 10_000 });
  if (result.code === 0) {
    const lib = /Using library: libvirt (\S+)/.exec(result.stdout)?.[1];
    const hv = /Running hypervisor: (.+)/.exec(result.stdout)?.[1];
    return {
      name: 'libvirt',
      ok: true,
      detail: `${uri}: libvirt ${lib ?? '?'}, ${hv ?? 'hypervisor ?'}`,
      fix: '',
      required: true,
    };
  }
  const why =
    result.spawnError?.code === 'ENOENT'
      ? 'virsh not found'
      : result.timedOut
        ? 'no answer in 10 s'
        : firstLine(result.stderr);
  const fix = result.spawnError
    ? `${APT} libvirt-clients libvirt-daemon-system`
    : uri.startsWith('qemu:///system')
      ? 'start the daemons: virtlogd -d && libvirtd -d (or: systemctl start libvirtd), or run npm run setup'
      : `check that libvirt answers at ${uri} (virsh -c ${uri} version)`;
  return { name: 'libvirt', ok: false, detail: `${uri}: ${why}`, fix, required: true };
};

export const checkAccel: Check = async ({ stateDir }) => {
  // Always a fresh probe (doctor must tell the truth now); it refreshes the cache runs use.
  const probe = await probeAccelCached(join(stateDir, 'accel.json'), { refresh: true });
  return {
    name: 'accel',
    ok: true,
    detail: probe.detail,
    fix:
      probe.domainType === 'kvm'
        ? ''
        : 'VMs run under TCG (slower); enable KVM for speed: virtualisation in firmware, /dev/kvm access',
    required: true,
  };
};

export const checkFwCfg: Check = async () => {
  const result = await run('qemu-system-x86_64', ['-help'], { timeoutMs: 10_000 });
  const ok = result.code === 0 && result.stdout.includes('-fw_cfg');
  return {
    name: 'fw_cfg',
    ok,
    detail: ok
      ? 'qemu supports -fw_cfg (Ignition under opt/com.coreos/config)'
      : 'qemu-system-x86_64 has no -fw_cfg option',
    fix: ok ? '' : `${APT} qemu-system-x86 (QEMU >= 2.4 is needed for fw_cfg)`,
    required: true,
  };
};

export const checkGrub: Check = async () => {
  const missing = ['/usr/lib/grub/i386-pc/boot.img', '/usr/bin/grub-mkimage'].filter((path) => !existsSync(path));
  return {
    name: 'grub-pc-bin',
    ok: missing.length === 0,
    detail: missing.length === 0 ? 'GRUB i386-pc images present (fixture builds)' : `missing ${missing.join(', ')}`,
    fix: missing.length === 0 ? '' : `${APT} grub-pc-bin grub-common`,
    required: true,
  };
};

/** The fixture's ESP carries Debian's signed shim and GRUB (images/fixture/disk.sh): every fixture build needs them. */
export const checkSignedBootChain: Check = async () => {
  const files = ['/usr/lib/shim/shimx64.efi.signed', '/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed'];
  const missing = files.filter((path) => !existsSync(path));
  return {
    name: 'signed-boot-chain',
    ok: missing.length === 0,
    detail:
      missing.length === 0
        ? "Debian's signed shim and GRUB present (the fixture's ESP)"
        : `missing ${missing.join(', ')}`,
    fix: missing.length === 0 ? '' : `${APT} shim-signed grub-efi-amd64-signed`,
    required: true,
  };
};

/** `firmware: uefi-secure`: OVMF's Secure Boot build and its variables with Microsoft's keys enrolled. */
export const checkSecureBootFirmware: Check = async () => {
  const missing = [OVMF_SECURE.code, OVMF_SECURE.varsTemplate].filter((path) => !existsSync(path));
  return {
    name: 'secure-boot',
    ok: missing.length === 0,
    detail:
      missing.length === 0
        ? `firmware: uefi-secure can boot (${OVMF_SECURE.code}, ${OVMF_SECURE.varsTemplate})`
        : `firmware: uefi-secure cannot boot: missing ${missing.join(', ')}`,
    fix: missing.length === 0 ? '' : `${APT} ovmf`,
    required: false,
  };
};

/** `tpm: true`: libvirt runs swtpm (and swtpm_setup for a new state) for the emulated TPM. */
export const checkSwtpm: Check = async () => {
  const missing = SWTPM_FILES.filter((path) => !existsSync(path));
  const version = missing.length === 0 ? await run(SWTPM_FILES[0], ['--version'], { timeoutMs: 10_000 }) : undefined;
  const ok = version?.code === 0;
  return {
    name: 'swtpm',
    ok,
    detail: ok
      ? `tpm: true can run: ${firstLine(version!.stdout || version!.stderr)}`
      : missing.length > 0
        ? `tpm: true cannot run: missing ${missing.join(', ')}`
        : `swtpm --version failed: ${firstLine(version?.stderr ?? '') || `exit ${version?.code}`}`,
    fix: ok ? '' : `${APT} swtpm swtpm-tools`,
    required: false,
  };
};

export const checkDisk: Check = async ({ stateDir }) => {
  let path = stateDir;
  while (!existsSync(path) && dirname(path) !== path) path = dirname(path);
  const stats = statfsSync(path);
  const free = stats.bavail * stats.bsize;
  const gib = (free / 1024 ** 3).toFixed(1);
  const ok = free >= MIN_FREE_BYTES;
  return {
    name: 'disk',
    ok,
    detail: `${gib} GiB free at ${path} (state directory ${stateDir})`,
    fix: ok ? '' : `free at least 4 GiB there, or point DEVPIVOT_STATE_DIR at a larger filesystem`,
    required: true,
  };
};

/**
 * Under qemu:///system, QEMU runs as libvirt-qemu: every directory on the way to a volume must be searchable by
 * that user. devpivot keeps its volumes in a pool under /var/lib/libvirt/images, which is.
 */
export const checkPool: Check = async ({ uri }) => {
  if (!uri.startsWith('qemu:///system')) {
    return {
      name: 'storage-pool',
      ok: true,
      detail: `${uri}: pool in the user's own libvirt directory`,
      fix: '',
      required: true,
    };
  }
  const path = '/var/lib/libvirt/images';
  if (!existsSync(path)) {
    return {
      name: 'storage-pool',
      ok: false,
      detail: `${path} does not exist`,
      fix: `${APT} libvirt-daemon-system`,
      required: true,
    };
  }
  const result = await run('runuser', ['-u', 'libvirt-qemu', '--', 'test', '-x', path], { timeoutMs: 5000 });
  const ok = result.code === 0;
  return {
    name: 'storage-pool',
    ok,
    detail: ok
      ? `${path} is searchable by libvirt-qemu`
      : `libvirt-qemu cannot enter ${path}: ${firstLine(result.stderr) || `exit ${result.code}`}`,
    fix: ok ? '' : `chmod o+x ${path} (and its parents), or run libvirt as a user that can read it`,
    required: true,
  };
};

/** Which fixture build a run uses: the user's own cache, the shared (root's) one read-only, or none yet. */
export const checkFixture: Check = async ({ env }) => {
  const state = await fixtureState({ env });
  const fresh = state.fresh;
  return {
    name: 'fixture',
    ok: fresh,
    detail: !fresh
      ? `not built for this recipe (${state.key}); a run builds it into ${state.dir}`
      : state.source === 'shared'
        ? `${state.key}: the shared cache, read-only (${state.dir}); your own cache has no build`
        : `${state.key}: your own cache (${state.dir})`,
    fix: fresh ? '' : 'devpivot images build (as root, or without root in a user namespace)',
    required: false,
  };
};

export const checks: Check[] = [
  checkLibvirt,
  program('qemu', 'qemu-system-x86_64', ['--version'], 'qemu-system-x86'),
  program('qemu-img', 'qemu-img', ['--version'], 'qemu-utils'),
  checkAccel,
  checkFwCfg,
  program('skopeo', 'skopeo', ['--version'], 'skopeo'),
  program('ostree', 'ostree', ['--version'], 'ostree'),
  // registry: { tls: true } and registry serve --tls make their CA and certificate with it (registry/tls.ts).
  program('openssl', 'openssl', ['version'], 'openssl'),
  program('ignition-validate', 'ignition-validate', ['--version'], 'ignition'),
  checkGrub,
  checkSignedBootChain,
  checkSecureBootFirmware,
  checkSwtpm,
  checkDisk,
  checkPool,
  checkFixture,
];

/** Run every check concurrently (the KVM probe is the slow one, bounded to ~5 s). */
export async function runChecks(context: CheckContext, list: Check[] = checks): Promise<CheckResult[]> {
  return Promise.all(
    list.map((check) =>
      check(context).catch((error: unknown) => ({
        name: check.name || 'check',
        ok: false,
        detail: `check crashed: ${(error as Error).message}`,
        fix: 'report this as a devpivot bug (rerun with DEBUG=devpivot)',
        required: true,
      })),
    ),
  );
}
