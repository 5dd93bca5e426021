/**
 * What each pivot driver (docs/PROTOCOLS.md) and each option needs on the guest, as spec-neutral files, units and
 * users. `render.ts` turns them into a spec 3 or spec 2 config.
 */
import { UsageError } from '../core/errors.js';
import { mcdFragment } from './mcd-fragment.js';
import { type MirrorPrefix, mirrorFragment } from './mirror-fragment.js';
import { REPORT_SCRIPT, UPDATE_UNITS } from './report-script.js';

export type PivotDriver = 'legacy' | 'rpm-ostree' | 'bootc' | 'mcd';
export const PIVOT_DRIVERS: readonly PivotDriver[] = ['legacy', 'rpm-ostree', 'bootc', 'mcd'];

export interface FileNode {
  path: string;
  contents: string;
  mode: number;
}

export interface UnitNode {
  name: string;
  enabled?: boolean;
  contents?: string;
  dropins?: Array<{ name: string; contents: string }>;
}

export interface UserNode {
  name: string;
  sshAuthorizedKeys: string[];
}

export interface Fragment {
  files: FileNode[];
  units: UnitNode[];
  users: UserNode[];
}

export interface RegistryTrust {
  /** host:port as the GUEST reaches the registry, e.g. `10.0.2.2:5000`. */
  hostPort: string;
  /** Plain HTTP registry: a registries.conf.d drop-in marks it insecure. */
  insecure?: boolean;
  /** Or trust this CA (PEM) for the registry's TLS certificate. */
  caPem?: string;
  /** Mirror mode: prefixes whose digest pulls go to this registry (mirror-fragment.ts). */
  mirrors?: MirrorPrefix[];
}

/** `ADD:x` / `DELETE:x` (or `ADD x`) → `{op, arg}`. */
export interface KernelArg {
  op: 'ADD' | 'DELETE';
  arg: string;
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

export const CONSOLE_DROPIN = {
  name: '10-devpivot-console.conf',
  contents:
    "# devpivot: copy this unit's output to the console so the host can follow the pivot\n" +
    '[Service]\nStandardOutput=journal+console\nStandardError=journal+console\n',
};

/** Marks the pivot as done (on /var, shared by all deployments) so the new OS does not pivot again. */
const STAMP = '/var/lib/devpivot/pivot-started';

function pivotUnit(description: string, commands: string[]): string {
  return [
    '[Unit]',
    `Description=${description}`,
    'Wants=network-online.target',
    'After=network-online.target',
    `ConditionPathExists=!${STAMP}`,
    '',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    'StandardOutput=journal+console',
    'StandardError=journal+console',
    ...commands.map((command) => `ExecStart=${command}`),
    `ExecStart=/bin/sh -c 'mkdir -p ${STAMP.slice(0, STAMP.lastIndexOf('/'))} && touch ${STAMP}'`,
    'ExecStart=/usr/bin/systemctl reboot',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

const DIGEST_PINNED = /@sha256:[a-f0-9]{64}$/;

/** appendInitialPivot's unit, byte for byte (MCO release-4.5 pkg/server/server.go). */
export const MCD_WRITE_PIVOT_REBOOT = {
  name: 'mcd-write-pivot-reboot.service',
  contents: `[Unit]
Before=pivot.service
ConditionFirstBoot=true
[Service]
ExecStart=/bin/sh -c 'mkdir /run/pivot && touch /run/pivot/reboot-needed'
[Install]
WantedBy=multi-user.target
`,
};

/**
 * Fedora CoreOS's update agent must not race devpivot's rebase: what kola writes on FCOS (flatcar/mantle
 * `platform/cluster.go` `RenderUserData`, 845b7546; coreos/zincati `docs/usage/auto-updates.md`, "Disabling
 * auto-updates"). Zincati then stays up idle; a guest without Zincati ignores the file.
 */
export const ZINCATI_DISABLE = {
  path: '/etc/zincati/config.d/90-disable-auto-updates.toml',
  contents: '[updates]\nenabled = false\n',
  mode: 0o644,
};

export function driverFragment(
  driver: PivotDriver,
  image: string,
  kernelArgs: KernelArg[],
  options: { mcoImage?: string } = {},
): Fragment {
  // The MCD of 4.13 takes both formats by tag or digest; its MachineConfig is what the MCS would serve.
  if (driver === 'mcd') return mcdFragment(image, kernelArgs, options.mcoImage);
  const fragment: Fragment = { files: [], units: [], users: [] };
  if (driver === 'legacy') {
    // pivot.service pulls exactly what the pullspec names: a tag could move under it, a digest cannot.
    if (!DIGEST_PINNED.test(image)) {
      throw new UsageError(
        `the legacy driver needs the image by digest, got '${image}'`,
        'use HOST:PORT/REPO@sha256:… (devpivot build prints it)',
        'IGNITION_IMAGE_NOT_PINNED',
      );
    }
    fragment.files.push({ path: '/etc/pivot/image-pullspec', contents: `${image}\n`, mode: 0o644 });
    if (kernelArgs.length > 0) {
      fragment.files.push({
        path: '/etc/pivot/kernel-args',
        contents: kernelArgs.map((k) => `${k.op} ${k.arg}\n`).join(''),
        mode: 0o644,
      });
    }
    fragment.units.push({ name: 'pivot.service', dropins: [CONSOLE_DROPIN] });
    // What the machine-config server of 4.1–4.5 wrote next to the pullspec (openshift/machine-config-operator
    // release-4.5 pkg/server/server.go appendInitialPivot, f84e07a9): pivot.service runs pivot without --reboot,
    // and pivot reboots only when /run/pivot/reboot-needed exists, which this unit creates on the first boot.
    fragment.units.push({
      name: MCD_WRITE_PIVOT_REBOOT.name,
      enabled: true,
      contents: MCD_WRITE_PIVOT_REBOOT.contents,
    });
    // rpm-ostree stages the deployment: it is written at shutdown, and its log says whether that worked.
    fragment.units.push({ name: 'ostree-finalize-staged.service', dropins: [CONSOLE_DROPIN] });
    return fragment;
  }
  fragment.files.push({ ...ZINCATI_DISABLE });
  if (driver === 'rpm-ostree') {
    const commands = [`/usr/bin/rpm-ostree rebase --experimental ostree-unverified-registry:${image}`];
    if (kernelArgs.length > 0) {
      // Applies to the just-staged deployment, so the new OS boots with them.
      const flags = kernelArgs.map((k) => `${k.op === 'ADD' ? '--append' : '--delete'}=${k.arg}`);
      commands.push(`/usr/bin/rpm-ostree kargs ${flags.join(' ')}`);
    }
    fragment.units.push({
      name: 'devpivot-rebase.service',
      enabled: true,
      contents: pivotUnit('devpivot: rebase to the target OS image and reboot', commands),
    });
  } else {
    if (kernelArgs.length > 0) {
      throw new UsageError(
        'the bootc driver cannot set kernel arguments',
        'bootc images carry their kernel arguments in /usr/lib/bootc/kargs.d; drop --kernel-arg',
        'IGNITION_KERNEL_ARG',
      );
    }
    fragment.units.push({
      name: 'devpivot-switch.service',
      enabled: true,
      contents: pivotUnit('devpivot: switch to the target bootc image and reboot', [`/usr/bin/bootc switch ${image}`]),
    });
  }
  // The staged deployment is written at shutdown: its log says whether that worked.
  fragment.units.push({ name: 'ostree-finalize-staged.service', dropins: [CONSOLE_DROPIN] });
  return fragment;
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
  if (trust.caPem) {
    fragment.files.push({
      path: `/etc/containers/certs.d/${trust.hostPort}/ca.crt`,
      contents: trust.caPem.endsWith('\n') ? trust.caPem : `${trust.caPem}\n`,
      mode: 0o644,
    });
  }
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

export function accessFragment(options: { sshKeys?: string[]; hostname?: string }): Fragment {
  const fragment: Fragment = { files: [], units: [], users: [] };
  if (options.sshKeys && options.sshKeys.length > 0) {
    fragment.users.push({ name: 'core', sshAuthorizedKeys: [...new Set(options.sshKeys.map((k) => k.trim()))] });
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
