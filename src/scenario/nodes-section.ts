/** `nodes:`: the VMs of the scenario, by name (image, size, firmware, pivot driver and target, Ignition). */
import { isScalar, type Node } from 'yaml';
import { FIRMWARES, type Firmware } from '../core/firmware.js';
import { DRIVERS, driversAllowing, type PivotDriver, pivotDrivers } from '../drivers/index.js';
import { SPEC_VERSIONS, type SpecVersion } from '../ignition/spec.js';
import { isHostQualified } from '../oci/reference.js';
import { parseSize } from '../steps/units.js';
import { incompatibility } from './compatibility.js';
import { NODE_DEFAULTS } from './defaults.js';
import { readHealthCheck } from './health-check.js';
import { type DeferredCheck, nodeAt, readIgnitionFragment } from './ignition-fragment.js';
import { nodeSpec, specRefusal, specsOf } from './ignition-spec.js';
import { readKernelArgs } from './kernel-args.js';
import { NODE_TRUST_KEYS, readNodeTrust } from './node-trust.js';
import { type DocumentReader, type MappingFields, scalarLike } from './reader.js';
import { parseTagRef, TAG_REF_HINT } from './tag-ref.js';
import type { ImageSource, NodeDef, OscontainerSource, RegistrySpec } from './types.js';

const NODE_KEYS = [
  'image',
  'memory',
  'vcpus',
  'firmware',
  'tpm',
  'driver',
  'pivot',
  'kernel-args',
  'ignition-spec',
  'ignition',
  'mco-image',
  'follow',
  'health-check',
  ...NODE_TRUST_KEYS,
];
const MIN_MEMORY = 256 * 1024 ** 2;

export interface NodeContext {
  images: Map<string, ImageSource>;
  oscontainers: Map<string, OscontainerSource>;
  /** Checks that run after the document is read (ignition-validate). */
  deferred: DeferredCheck[];
  /** The registry section, when it read without errors (node-trust.ts checks against it). */
  registry?: RegistrySpec;
}

/** The nodes, in file order; an image or oscontainer named `fixture:N` is defined on first use. */
export function readNodes(r: DocumentReader, node: Node | null, context: NodeContext): NodeDef[] {
  const map = r.map(node, 'nodes');
  if (map.items.length === 0) r.fail(node, 'nodes needs at least one node');
  const out: NodeDef[] = [];
  for (const pair of map.items) {
    r.guard(() => {
      const name = r.nodeName(pair.key as Node);
      if (out.some((other) => other.name === name)) r.fail(pair.key as Node, `node '${name}' is defined twice`);
      out.push(readNode(r, name, pair.key as Node, pair.value as Node | null, context));
    });
  }
  if (out.length === 0 && r.issues.length === 0) r.fail(node, 'nodes needs at least one node');
  return out;
}

function readNode(r: DocumentReader, name: string, key: Node, value: Node | null, context: NodeContext): NodeDef {
  const { images, oscontainers } = context;
  const what = `node '${name}'`;
  const f =
    value === null || (isScalar(value) && value.value === null)
      ? (new Map() as MappingFields)
      : (r.guard(() => r.fields(value, what, NODE_KEYS)) ?? (new Map() as MappingFields));
  const v = (field: string) => f.get(field)?.value ?? null;
  // Each field is guarded: one wrong value does not hide the problems of the others.
  const field = <T>(fn: () => T, fallback: T): T => r.guard(fn) ?? fallback;
  const image = field(() => readImageRef(r, f.has('image') ? v('image') : null, what, images), 'fixture:1');
  const memoryMiB = f.has('memory') ? field(() => readMemory(r, v('memory'), what), 0) : NODE_DEFAULTS.memoryMiB;
  const vcpus = f.has('vcpus') ? field(() => r.integer(v('vcpus'), `${what} vcpus`, 1, 64), 1) : NODE_DEFAULTS.vcpus;
  const firmware = f.has('firmware')
    ? field(() => readFirmware(r, v('firmware'), what), NODE_DEFAULTS.firmware)
    : NODE_DEFAULTS.firmware;
  const tpm = f.has('tpm') ? field(() => readTpm(r, v('tpm'), what), false) : false;
  const driver: PivotDriver = f.has('driver')
    ? field(() => r.oneOf(v('driver'), `${what} driver`, pivotDrivers()), NODE_DEFAULTS.driver)
    : NODE_DEFAULTS.driver;
  const pivot = f.has('pivot')
    ? r.guard(() => {
        const target = r.target(v('pivot'), `${what} pivot target oscontainer`, oscontainers);
        const source = oscontainers.get(target);
        const why = source && incompatibility(driver, source);
        if (why) r.fail(v('pivot'), `${what} cannot pivot to '${target}': ${why}`, 'pick another driver or target');
        return target;
      })
    : undefined;
  let kernelArgs = { add: [] as string[], delete: [] as string[] };
  if (f.has('kernel-args')) {
    kernelArgs = field(() => readKernelArgs(r, v('kernel-args'), `${what} kernel-args`), kernelArgs);
    const can = DRIVERS[driver].kernelArgs;
    if ((kernelArgs.add.length > 0 && !can.add) || (kernelArgs.delete.length > 0 && !can.delete))
      r.guard(() =>
        r.fail(
          v('kernel-args'),
          `${what} kernel-args ${can.refusal?.message ?? `cannot be applied by the ${driver} driver`}`,
          can.refusal?.hint,
        ),
      );
  }
  // The MCO image the mcd units run; without one, devpivot builds and pushes the fixture's (its MCD stand-in).
  const mcoImage = f.has('mco-image')
    ? r.guard(() => {
        if (!DRIVERS[driver].nodeKeys.includes('mco-image'))
          r.fail(
            f.get('mco-image')!.key,
            `${what} mco-image needs driver: ${driversAllowing('mco-image').join(' or ')}`,
          );
        const text = r.string(v('mco-image'), `${what} mco-image`);
        if (!isHostQualified(text))
          r.fail(
            v('mco-image'),
            `${what} mco-image '${text}' is not a pullspec`,
            'write HOST[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST] as the guest reaches it',
          );
        return text;
      })
    : undefined;
  // `follow:` a tag of the embedded registry (pointed at the pivot target first): tag-following drivers' Ignition
  // names the tag, the others' the digest it names (their tools take digests only: DriverUpgrade).
  const follow = f.has('follow')
    ? r.guard(() => {
        if (!pivot) r.fail(f.get('follow')!.key, `${what} follow needs a pivot target (the image the tag names first)`);
        const text = r.string(v('follow'), `${what} follow`);
        if (!parseTagRef(text)) r.fail(v('follow'), `${what} follow '${text}' is not REPO:TAG`, TAG_REF_HINT);
        return text;
      })
    : undefined;
  const healthCheck = f.has('health-check')
    ? r.guard(() => readHealthCheck(r, v('health-check'), `${what} health-check`))
    : undefined;
  const explicitSpec = f.has('ignition-spec')
    ? r.guard(() => readSpec(r, v('ignition-spec'), what, driver))
    : undefined;
  const unwritten = explicitSpec ?? DRIVERS[driver].specs.default;
  const read = f.has('ignition')
    ? r.guard(() =>
        readIgnitionFragment(r, v('ignition'), `${what} ignition`, context.deferred, {
          ...(explicitSpec ? { explicit: explicitSpec } : {}),
          unwritten,
        }),
      )
    : undefined;
  const ignition = read?.fragment;
  // A fragment's own version may raise the spec (without ignition-spec): the driver must still read the result.
  const ignitionSpec = read ? nodeSpec(driver, explicitSpec, read.version) : unwritten;
  const refusal = explicitSpec ? undefined : specRefusal(driver, ignitionSpec);
  if (refusal && read)
    r.guard(() =>
      r.fail(
        nodeAt(v('ignition')!, ['ignition', 'version']),
        `${what} ignition is spec ${ignitionSpec}: ${refusal}`,
        `write ignition.version ${specsOf(driver).join(', ')}, or leave it out`,
      ),
    );
  return {
    name,
    image,
    memoryMiB,
    vcpus,
    firmware,
    tpm,
    driver,
    ...(pivot ? { pivot } : {}),
    kernelArgs,
    ignitionSpec,
    ...(ignition ? { ignition } : {}),
    ...(mcoImage ? { mcoImage } : {}),
    ...(follow ? { follow } : {}),
    ...(healthCheck ? { healthCheck } : {}),
    ...readNodeTrust(r, f, what, context.registry),
    pos: r.at(key),
  };
}

/** The image a node boots: defined, and one with a disk (later fixture versions are reached by pivoting). */
function readImageRef(r: DocumentReader, value: Node | null, what: string, images: Map<string, ImageSource>): string {
  const written = value ?? scalarLike('fixture:1');
  const image = r.ref(written, `${what} image`, images, (version) => ({ kind: 'fixture', version }));
  const source = images.get(image);
  const bootable = r.env.fixture.bootable;
  if (
    source?.kind === 'fixture' &&
    r.env.fixture.versions.includes(source.version) &&
    !bootable.includes(source.version)
  )
    r.fail(
      written,
      `${what} image '${image}' is fixture version ${source.version}, which has no disk: it is reached by pivoting`,
      `boot ${bootable.map((b) => `fixture:${b}`).join(' or ')} and pivot to fixture:${source.version}`,
    );
  return image;
}

/** `ignition-spec:`: a version devpivot writes, and one the driver's guests read. */
function readSpec(r: DocumentReader, value: Node | null, what: string, driver: PivotDriver): SpecVersion {
  const spec = r.oneOf(value, `${what} ignition-spec`, SPEC_VERSIONS);
  const refusal = specRefusal(driver, spec);
  if (refusal)
    r.fail(
      value,
      `${what} ignition-spec ${spec}: ${refusal}`,
      `one of ${specsOf(driver).join(', ')}, or another driver`,
    );
  return spec;
}

function readMemory(r: DocumentReader, value: Node | null, what: string): number {
  const raw = isScalar(value) ? value.value : undefined;
  const bytes = typeof raw === 'string' || typeof raw === 'number' ? parseSize(raw, 1024 ** 2) : undefined;
  if (bytes === undefined || !Number.isFinite(bytes) || bytes < MIN_MEMORY)
    r.fail(value, `${what} memory must be a size of at least 256MiB like 1024 (MiB) or 2GiB`);
  const total = r.env.totalMemoryBytes;
  if (bytes > total)
    r.fail(
      value,
      `${what} memory of ${gib(bytes)} is more than this host has (${gib(total)})`,
      `at most ${Math.floor(total / 1024 ** 2)} (MiB)`,
    );
  return Math.round(bytes / 1024 ** 2);
}

function readFirmware(r: DocumentReader, value: Node | null, what: string): Firmware {
  const firmware = r.oneOf(value, `${what} firmware`, FIRMWARES);
  const missing = (r.env.firmwareFiles[firmware] ?? []).filter((file) => r.env.pathKind(file) !== 'file');
  if (missing.length > 0)
    r.fail(
      value,
      `${what} firmware ${firmware} needs ${missing.join(' and ')}, which this host does not have`,
      firmware === 'bios' ? undefined : 'install OVMF (apt-get install ovmf), or use firmware: bios',
    );
  return firmware;
}

/** `tpm: true`: libvirt's emulated TPM 2.0, which needs swtpm where the VMs run. */
function readTpm(r: DocumentReader, value: Node | null, what: string): boolean {
  const tpm = r.boolean(value, `${what} tpm`);
  const missing = tpm ? (r.env.tpmFiles ?? []).filter((file) => r.env.pathKind(file) !== 'file') : [];
  if (missing.length > 0)
    r.fail(
      value,
      `${what} tpm needs ${missing.join(' and ')}, which this host does not have`,
      'install swtpm (apt-get install swtpm swtpm-tools), or leave tpm out',
    );
  return tpm;
}

function gib(bytes: number): string {
  const value = bytes / 1024 ** 3;
  return `${value >= 1e6 ? value.toExponential(2) : value.toFixed(value < 10 ? 1 : 0)} GiB`;
}
