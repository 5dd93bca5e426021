/**
 * What each option (and, through src/drivers/, each pivot driver) needs on the guest, as spec-neutral files, units and
 * users. `render.ts` turns them into a spec 3 or spec 2 config.
 */
import { UsageError } from '../core/errors.js';
import { DRIVERS, type PivotDriver } from '../drivers/index.js';
import type { Fragment, KernelArg } from './fragment.js';
import { type MirrorPrefix, mirrorFragment } from './mirror-fragment.js';
import { REPORT_SCRIPT, UPDATE_UNITS } from './report-script.js';
import { caFiles } from './trust-files.js';

export type { FileNode, Fragment, KernelArg, UnitNode, UserNode } from './fragment.js';
export { CONSOLE_DROPIN } from './fragment.js';

export interface RegistryTrust {
  /** host:port as the GUEST reaches the registry, e.g. `10.0.2.2:5000`. */
  hostPort: string;
  /** Plain HTTP registry: a registries.conf.d drop-in marks it insecure. */
  insecure?: boolean;
  /** Or trust this CA (PEM) for the registry's TLS certificate (trust-files.ts). */
  caPem?: string;
  /** The node's pull secret (auth.json), written where its driver's tool reads it (trust-files.ts). */
  pullSecret?: string;
  /** Mirror mode: prefixes whose digest pulls go to this registry (mirror-fragment.ts). */
  mirrors?: MirrorPrefix[];
}

export function parseKernelArg(text: string): KernelArg {
  const match = /^(ADD|DELETE)[: ](.+)$/i.exec(text.trim());
  if (!match || /\s/.test(match[2]!)) {
    throw new UsageError(
      `invalid kernel argument '${text}'`,
      'write ADD:ARG or DELETE:ARG, one argument each, e.g. --kernel-arg ADD:console=ttyS0',
      'IGNITION_KERNEL_ARG',
    );
  }
  return { op: match[1]!.toUpperCase() as KernelArg['op'], arg: match[2]! };
}

export function driverFragment(
  driver: PivotDriver,
  image: string,
  kernelArgs: KernelArg[],
  options: { mcoImage?: string } = {},
): Fragment {
  return DRIVERS[driver].fragment(image, kernelArgs, options);
}

/**
 * containers/image before registries.conf v2 (2019, RHCOS 4.1–4.5, the spec 2.2 guests) reads neither
 * registries.conf.d nor `[[registry]]` tables: there the whole v1 file is written, as the machine-config
 * operator of that era rendered it (with RHCOS's default search list).
 */
function registriesConfV1(hostPort: string): string {
  return [
    '# devpivot: registries.conf (v1 format, for containers/image older than registries.conf v2)',
    '[registries.search]',
    "registries = ['registry.access.redhat.com', 'docker.io']",
    '',
    '[registries.insecure]',
    `registries = ['${hostPort}']`,
    '',
    '[registries.block]',
    'registries = []',
    '',
  ].join('\n');
}

export function trustFragment(trust: RegistryTrust, options: { legacyRegistriesConf?: boolean } = {}): Fragment {
  const fragment: Fragment = { files: [], units: [], users: [] };
  if (!/^[^/\s]+:\d+$/.test(trust.hostPort) && !/^[^/\s:]+$/.test(trust.hostPort)) {
    throw new UsageError(
      `invalid registry address '${trust.hostPort}'`,
      'write HOST:PORT as the guest reaches it, e.g. 10.0.2.2:5000',
      'IGNITION_REGISTRY',
    );
  }
  if (trust.insecure) {
    fragment.files.push({
      path: '/etc/containers/registries.conf.d/50-devpivot.conf',
      contents: `# devpivot: the local registry serves plain HTTP\n[[registry]]\nlocation = "${trust.hostPort}"\ninsecure = true\n`,
      mode: 0o644,
    });
    if (options.legacyRegistriesConf) {
      fragment.files.push({
        path: '/etc/containers/registries.conf',
        contents: registriesConfV1(trust.hostPort),
        mode: 0o644,
      });
    }
  }
  if (trust.mirrors?.length) {
    // The v1 registries.conf of spec-2 guests has no mirrors, and their containers/image reads no drop-ins.
    if (options.legacyRegistriesConf)
      throw new UsageError(
        'mirror mode needs Ignition spec 3: spec-2 guests read a v1 registries.conf, which has no mirrors',
        undefined,
        'IGNITION_MIRROR',
      );
    fragment.files.push(...mirrorFragment(trust.mirrors, trust.hostPort, trust.insecure === true).files);
  }
  if (trust.caPem) fragment.files.push(...caFiles(trust.hostPort, trust.caPem));
  return fragment;
}

export function reportFragment(): Fragment {
  return {
    files: [{ path: '/etc/devpivot/report.sh', contents: REPORT_SCRIPT, mode: 0o755 }],
    units: [
      {
        name: 'devpivot-report.service',
        enabled: true,
        contents: [
          '[Unit]',
          'Description=devpivot: report the booted OS version, commit and image',
          'After=local-fs.target',
          // Ordering only (no Wants): the boot line comes before any update unit's output.
          `Before=${UPDATE_UNITS.join(' ')}`,
          '',
          '[Service]',
          'Type=oneshot',
          'ExecStart=/bin/sh /etc/devpivot/report.sh',
          '',
          '[Install]',
          'WantedBy=multi-user.target',
          '',
        ].join('\n'),
      },
    ],
    users: [],
  };
}

/** A host key pair for sshd, written where sshd-keygen@.service would have made it (`/etc/ssh/ssh_host_TYPE_key`). */
export interface HostKeyFile {
  type: 'rsa' | 'ecdsa' | 'ed25519';
  privateKey: string;
  publicKey: string;
}

export function accessFragment(options: { sshKeys?: string[]; hostname?: string; hostKeys?: HostKeyFile[] }): Fragment {
  const fragment: Fragment = { files: [], units: [], users: [] };
  if (options.sshKeys && options.sshKeys.length > 0) {
    fragment.users.push({ name: 'core', sshAuthorizedKeys: [...new Set(options.sshKeys.map((k) => k.trim()))] });
  }
  // Modes as ssh-keygen makes them: sshd refuses a private host key others can read.
  for (const key of options.hostKeys ?? []) {
    const path = `/etc/ssh/ssh_host_${key.type}_key`;
    fragment.files.push(
      { path, contents: key.privateKey, mode: 0o600 },
      { path: `${path}.pub`, contents: `${key.publicKey.trim()}\n`, mode: 0o644 },
    );
  }
  if (options.hostname !== undefined) {
    if (
      !/^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/.test(
        options.hostname,
      )
    ) {
      throw new UsageError(
        `invalid hostname '${options.hostname}'`,
        'use letters, digits, dots and hyphens',
        'IGNITION_HOSTNAME',
      );
    }
    fragment.files.push({ path: '/etc/hostname', contents: `${options.hostname}\n`, mode: 0o644 });
  }
  return fragment;
}

/** Join fragments; a later unit with the same name gets its drop-ins appended. */
export function combine(...fragments: Fragment[]): Fragment {
  const result: Fragment = { files: [], units: [], users: [] };
  for (const fragment of fragments) {
    result.files.push(...fragment.files);
    for (const unit of fragment.units) {
      const existing = result.units.find((u) => u.name === unit.name);
      if (!existing) result.units.push({ ...unit, dropins: unit.dropins ? [...unit.dropins] : undefined });
      else existing.dropins = [...(existing.dropins ?? []), ...(unit.dropins ?? [])];
    }
    result.users.push(...fragment.users);
  }
  return result;
}
