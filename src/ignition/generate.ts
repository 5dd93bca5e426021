/**
 * The Ignition config devpivot hands a node: the pivot driver's fragment, registry trust, console drop-ins,
 * the report unit, access (ssh keys, hostname), then the user's own config merged on top.
 */
import { DevpivotError } from '../core/errors.js';
import { DRIVERS, type PivotDriver } from '../drivers/index.js';
import {
  accessFragment,
  combine,
  driverFragment,
  type HostKeyFile,
  type KernelArg,
  parseKernelArg,
  type RegistryTrust,
  reportFragment,
  trustFragment,
} from './fragments.js';
import { type HealthCheck, healthCheckFragment } from './health-check.js';
import { appendSpec2, mergeSpec3 } from './merge.js';
import { type IgnitionConfig, render, serializeIgnition } from './render.js';
import {
  compareVersions,
  DEFAULT_SPEC,
  isSpecVersion,
  majorOf,
  parseSpecVersion,
  SPEC_VERSIONS,
  type SpecVersion,
} from './spec.js';
import { withPullSecret } from './trust-files.js';

export interface IgnitionOptions {
  driver: PivotDriver;
  /**
   * Target image; by digest for `legacy` (`HOST:PORT/REPO@sha256:…`), as the guest reaches it. Without one the node
   * gets no update units, only the rest (trust, report, access, the user's config): a node that does not pivot.
   */
  image?: string;
  /** The `mcd` driver's machine-config-operator image (its units run the MCD from it), as the guest reaches it. */
  mcoImage?: string;
  /** Default: 3.0.0, or the version of `extra` when newer. Validated (IGNITION_SPEC on an unsupported one). */
  spec?: SpecVersion | string;
  registry?: RegistryTrust;
  /** `ADD:arg` / `DELETE:arg` strings, parsed entries, or `{add, delete}` lists. */
  kernelArgs?: Array<string | KernelArg> | { add?: string[]; delete?: string[] };
  sshKeys?: string[];
  /** sshd's host keys (`/etc/ssh/ssh_host_TYPE_key` and `.pub`): the node skips making its own on first boot. */
  hostKeys?: HostKeyFile[];
  hostname?: string;
  /** The user's own config (parsed JSON), merged over devpivot's with the spec's merge semantics. */
  extra?: object;
  /** Install the boot report unit (default true; harmless on guests that print the line natively). */
  report?: boolean;
  /** greenboot on (`health-check:`): its units enabled and on the console, the boot attempts, a required check. */
  healthCheck?: HealthCheck;
}

function extraVersion(extra: object): string {
  const version = (extra as { ignition?: { version?: unknown } }).ignition?.version;
  if (typeof version !== 'string') {
    throw new DevpivotError('IGNITION_INVALID', 'the extra Ignition config has no ignition.version', {
      hint: 'an Ignition config starts with {"ignition": {"version": "3.3.0"}}',
      exitCode: 2,
    });
  }
  return version;
}

/** Pick the spec version: explicit, else the default raised to the user's config's version. */
export function chooseSpec(spec: SpecVersion | undefined, extra: object | undefined): SpecVersion {
  if (!extra) return spec ?? DEFAULT_SPEC;
  const version = extraVersion(extra);
  const mismatch = (why: string) =>
    new DevpivotError('IGNITION_SPEC_MISMATCH', `the extra Ignition config (spec ${version}) ${why}`, {
      hint: `pass --spec with a version the guest's Ignition reads (${SPEC_VERSIONS.join(', ')}) that is not older than the extra config`,
      exitCode: 2,
    });
  if (spec) {
    if (majorOf(version) !== majorOf(spec)) throw mismatch(`cannot be merged into a spec ${spec} config`);
    if (compareVersions(version, spec) > 0) throw mismatch(`is newer than the requested spec ${spec}`);
    return spec;
  }
  if (majorOf(version) === 2) {
    if (compareVersions(version, '2.2.0') > 0)
      throw mismatch('is newer than spec 2.2.0, the only spec 2 devpivot writes');
    return '2.2.0';
  }
  if (majorOf(version) !== 3) throw mismatch('has an unknown major version');
  if (compareVersions(version, DEFAULT_SPEC) <= 0) return DEFAULT_SPEC;
  if (!isSpecVersion(version)) throw mismatch('is newer than the newest spec devpivot writes (3.3.0)');
  return version;
}

function normaliseKernelArgs(input: IgnitionOptions['kernelArgs']): KernelArg[] {
  if (!input) return [];
  if (Array.isArray(input)) return input.map((k) => (typeof k === 'string' ? parseKernelArg(k) : k));
  return [
    ...(input.add ?? []).map((arg) => parseKernelArg(`ADD:${arg}`)),
    ...(input.delete ?? []).map((arg) => parseKernelArg(`DELETE:${arg}`)),
  ];
}

export function generateIgnition(options: IgnitionOptions): IgnitionConfig {
  const spec = chooseSpec(options.spec === undefined ? undefined : parseSpecVersion(options.spec), options.extra);
  const kernelArgs = normaliseKernelArgs(options.kernelArgs);
  const fragment = combine(
    options.image === undefined
      ? { files: [], units: [], users: [] }
      : driverFragment(options.driver, options.image, kernelArgs, {
          ...(options.mcoImage ? { mcoImage: options.mcoImage } : {}),
        }),
    options.registry
      ? trustFragment(options.registry, { legacyRegistriesConf: majorOf(spec) === 2 })
      : { files: [], units: [], users: [] },
    options.report === false ? { files: [], units: [], users: [] } : reportFragment(),
    accessFragment({ sshKeys: options.sshKeys, hostname: options.hostname, hostKeys: options.hostKeys }),
    options.healthCheck ? healthCheckFragment(options.healthCheck) : { files: [], units: [], users: [] },
  );
  const secret = options.registry?.pullSecret;
  const base = render(
    secret ? withPullSecret(fragment, DRIVERS[options.driver].pullSecretPaths, secret) : fragment,
    spec,
  );
  if (!options.extra) return base;
  const merged = majorOf(spec) === 2 ? appendSpec2(base, options.extra) : mergeSpec3(base, options.extra);
  // The merged config is written in the chosen spec: older 3.x configs are valid newer 3.x configs.
  (merged.ignition as { version: string }).version = spec;
  return merged as IgnitionConfig;
}

export { serializeIgnition };
