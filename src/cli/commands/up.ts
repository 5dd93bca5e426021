import { existsSync } from 'node:fs';
import { UsageError } from '../../core/errors.js';
import { FIRMWARES, type Firmware, isFirmware } from '../../core/firmware.js';
import { libvirtUri } from '../../core/paths.js';
import { checkOsImage, overrideOsImage } from '../../scenario/os-image.js';
import { overrideRegistryTrust } from '../../scenario/registry-override.js';
import type { Command } from '../command.js';
import { scenarioEnvironment } from '../scenario-environment.js';
import { ciPresenter, DEFAULT_SCENARIO, runScenarioFiles, scenarioOptions } from '../scenario-run.js';

/** The Ink view only where someone watches: a terminal, and not CI. */
export function interactive(stdout: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  return Boolean(stdout.isTTY) && !env.CI && env.TERM !== 'dumb';
}

export const command: Command = {
  name: 'up',
  summary: 'Run a scenario live: registry, images, VMs, pivot (default: old-to-new)',
  usage:
    '[FILE] [--os-image PULLSPEC] [--firmware FW] [--tls] [--auth] [--json] [--junit FILE] [--keep] [--connect URI]',
  description:
    'Start the registry, build the oscontainers, boot the nodes and watch them pivot, live. Without FILE it runs\n' +
    'scenarios/old-to-new.yaml: a fixture:1 node pivots to an oscontainer built from fixture:2.\n' +
    'Keys: up/down or Tab select a node, c toggles its console, q quits (removing the VMs), k quits keeping them.\n' +
    'Not a terminal, CI=true or --json: plain lines (or NDJSON) instead of the interactive view.\n' +
    "--os-image PULLSPEC (the installer's osImageURLOverride): the scenario's pivot target becomes that image, pulled\n" +
    'into the embedded registry and given to the guest pinned by digest (HOST[:PORT]/REPO[:TAG] or @sha256:...).\n' +
    '--firmware bios|uefi|uefi-secure: every node boots with that firmware (uefi-secure: OVMF with Secure Boot on).\n' +
    '--tls / --auth: the embedded registry serves HTTPS with a CA carried to the nodes / requires credentials, each\n' +
    "node given a pull secret where its driver's tool reads it (the scenario's registry: { tls: true, auth: true }).",
  options: {
    ...scenarioOptions,
    'os-image': {
      type: 'string',
      valueName: 'PULLSPEC',
      description: "Pivot to this image instead of the scenario's target (osImageURLOverride)",
    },
    firmware: {
      type: 'string',
      valueName: 'FW',
      description: `Every node's firmware: ${FIRMWARES.join(', ')}`,
    },
    tls: { type: 'boolean', description: 'The embedded registry serves HTTPS; its CA reaches the nodes by Ignition' },
    auth: { type: 'boolean', description: 'The embedded registry requires credentials; the nodes get a pull secret' },
  },
  positionals: [0, 1],
  async run(context) {
    const file = context.args.positionals[0] ?? DEFAULT_SCENARIO;
    const written = context.args.string('os-image');
    // Checked before anything starts: a bad pullspec is a usage error (exit status 2).
    const osImage = written === undefined ? undefined : checkOsImage(written);
    const firmware = checkFirmware(
      context.args.string('firmware'),
      libvirtUri(context.args.string('connect'), context.env),
    );
    const trust = { tls: context.args.flag('tls'), auth: context.args.flag('auth') };
    const rewrite = (text: string, name: string) =>
      overrideRegistryTrust(osImage ? overrideOsImage(text, name, osImage) : text, name, trust);
    const load = {
      ...(osImage || trust.tls || trust.auth ? { rewrite } : {}),
      ...(firmware ? { firmware } : {}),
    };
    if (context.args.flag('json') || !interactive(context.stdout, context.env)) {
      return runScenarioFiles([file], context, () => ciPresenter(context), load);
    }
    const { tuiPresenter } = await import('../../tui/presenter.js');
    return runScenarioFiles([file], context, (scenario) => tuiPresenter(scenario, context), load);
  },
};

/** `--firmware`: one of FIRMWARES whose files this host has (for a local libvirt), else a usage error (exit 2). */
function checkFirmware(written: string | undefined, uri: string): Firmware | undefined {
  if (written === undefined) return undefined;
  if (!isFirmware(written))
    throw new UsageError(`--firmware ${written}: not a firmware`, `one of ${FIRMWARES.join(', ')}`);
  const missing = (scenarioEnvironment(uri).firmwareFiles[written] ?? []).filter((file) => !existsSync(file));
  if (missing.length > 0)
    throw new UsageError(
      `--firmware ${written} needs ${missing.join(' and ')}, which this host does not have`,
      'install OVMF (apt-get install ovmf), or use --firmware bios',
    );
  return written;
}
