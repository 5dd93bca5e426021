import { readFile } from 'node:fs/promises';
import { DevpivotError, UsageError } from '../../core/errors.js';
import { DRIVERS, driversAllowing, isPivotDriver, pivotDrivers } from '../../drivers/index.js';
import type { RegistryTrust } from '../../ignition/fragments.js';
import { generateIgnition, serializeIgnition } from '../../ignition/generate.js';
import { parseSpecVersion } from '../../ignition/spec.js';
import { assertValidIgnition } from '../../ignition/validate.js';
import { parseReference } from '../../oci/reference.js';
import { type MirrorPrefix, parseMirrorPrefix } from '../../scenario/mirror-prefix.js';
import type { Command } from '../command.js';

async function readUserFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new DevpivotError('FILE_UNREADABLE', `cannot read ${what} ${path}: ${(error as Error).message}`, {
      exitCode: 2,
      cause: error,
    });
  }
}

/** `--ssh-key` takes a key or a path to a `.pub` file. */
async function sshKey(value: string): Promise<string> {
  if (/^(ssh-|ecdsa-|sk-)/.test(value.trim())) return value.trim();
  return (await readUserFile(value, 'ssh public key')).trim();
}

/** `--mirror PREFIX`: a repository namespace, checked as a scenario's `registry.mirror` prefix is. */
function mirrorPrefix(prefix: string): MirrorPrefix {
  const parsed = parseMirrorPrefix(prefix, '--mirror');
  if ('message' in parsed) throw new UsageError(parsed.message, parsed.hint);
  return parsed;
}

export const command: Command = {
  name: 'ignition',
  summary: 'Print the Ignition config that makes a node pivot to an image',
  usage: '--driver legacy|rpm-ostree|bootc|mcd --image REF [--mco-image REF] [options]',
  description:
    "Print the Ignition config devpivot gives a node (pretty JSON, to read and diff): the pivot driver's part\n" +
    '(legacy: /etc/pivot/image-pullspec; rpm-ostree: a rebase unit; bootc: a switch unit; mcd: the encapsulated\n' +
    "MachineConfig and the machine-config daemon's firstboot units, run from --mco-image), registry trust and mirrors,\n" +
    'console drop-ins, the boot report unit, ssh keys, hostname, and your own config merged on top.\n' +
    "Spec 3 output is checked with ignition-validate, spec 2.2 with devpivot's own rules.",
  options: {
    driver: {
      type: 'string',
      valueName: 'DRIVER',
      description: `Pivot driver: ${pivotDrivers().join(', ')} (default legacy)`,
    },
    image: { type: 'string', valueName: 'REF', description: 'Target image as the guest pulls it (legacy: by digest)' },
    spec: {
      type: 'string',
      valueName: 'VERSION',
      description: 'Ignition spec: 3.0.0-3.3.0, or 2.2.0 for RHCOS 4.1-4.5',
    },
    ignition: { type: 'string', valueName: 'FILE', description: "Your own Ignition config, merged over devpivot's" },
    'insecure-registry': {
      type: 'string',
      valueName: 'HOST:PORT',
      description: 'Mark this plain-HTTP registry insecure',
    },
    ca: { type: 'string', valueName: 'FILE', description: "Trust this CA (PEM) for the image's registry" },
    mirror: {
      type: 'string',
      multiple: true,
      valueName: 'PREFIX',
      description: 'Send digest pulls under PREFIX (quay.io/ns) to the --insecure-registry or --ca registry',
    },
    'mco-image': {
      type: 'string',
      valueName: 'REF',
      description: 'Driver mcd: the machine-config-operator image its units run, as the guest pulls it',
    },
    'ssh-key': {
      type: 'string',
      multiple: true,
      valueName: 'KEY',
      description: "SSH key (or .pub file) for user 'core'",
    },
    hostname: { type: 'string', valueName: 'NAME', description: 'Set /etc/hostname' },
    'kernel-arg': {
      type: 'string',
      multiple: true,
      valueName: 'ADD:X',
      description: 'Kernel argument: ADD:X or DELETE:X',
    },
    'no-report': { type: 'boolean', description: 'Leave out the boot report unit' },
  },
  async run({ args, stdout, stderr }) {
    const driver = args.string('driver') ?? 'legacy';
    if (!isPivotDriver(driver)) {
      throw new UsageError(`unknown driver '${driver}'`, `use one of ${pivotDrivers().join(', ')}`);
    }
    const image = args.string('image');
    if (!image) throw new UsageError('--image is required', 'e.g. --image 10.0.2.2:5000/os/rhcos@sha256:…');
    const spec = args.string('spec') === undefined ? undefined : parseSpecVersion(args.string('spec')!);
    let extra: object | undefined;
    const extraPath = args.string('ignition');
    if (extraPath) {
      const text = await readUserFile(extraPath, 'Ignition config');
      await assertValidIgnition(text, `Ignition config ${extraPath}`);
      extra = JSON.parse(text) as object;
    }
    const insecure = args.string('insecure-registry');
    const caPath = args.string('ca');
    let registry: RegistryTrust | undefined;
    if (insecure) registry = { hostPort: insecure, insecure: true };
    if (caPath) {
      const caPem = await readUserFile(caPath, 'CA certificate');
      if (!caPem.includes('-----BEGIN CERTIFICATE-----')) {
        throw new UsageError(`${caPath} is not a PEM certificate`, 'pass the registry CA in PEM format', 'IGNITION_CA');
      }
      registry = { hostPort: insecure ?? parseReference(image).registry, ...registry, caPem };
    }
    const mirrors = args.strings('mirror').map(mirrorPrefix);
    if (mirrors.length > 0) {
      if (!registry)
        throw new UsageError(
          '--mirror needs the registry that serves the mirrored content',
          'add --insecure-registry HOST:PORT (or --ca FILE for a TLS registry named by --image)',
        );
      registry = { ...registry, mirrors };
    }
    const mcoImage = args.string('mco-image');
    const withMco = driversAllowing('mco-image').join(' or ');
    if (mcoImage !== undefined && !DRIVERS[driver].nodeKeys.includes('mco-image'))
      throw new UsageError(
        `--mco-image applies to --driver ${withMco} only (this is ${driver})`,
        `leave it out, or use --driver ${withMco}`,
      );
    const config = generateIgnition({
      driver,
      image,
      ...(mcoImage ? { mcoImage } : {}),
      spec,
      registry,
      kernelArgs: args.strings('kernel-arg'),
      sshKeys: await Promise.all(args.strings('ssh-key').map(sshKey)),
      hostname: args.string('hostname'),
      extra,
      report: !args.flag('no-report'),
    });
    const validation = await assertValidIgnition(config, 'the generated config');
    if (!validation.checked) {
      stderr.write('warning: ignition-validate is not installed; the config was not validated (see devpivot doctor)\n');
    }
    stdout.write(serializeIgnition(config));
    return 0;
  },
};
