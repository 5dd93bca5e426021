/** `nodes:`: the VMs of the scenario, by name (image, size, firmware, pivot driver and target, Ignition). */
import { isScalar, type Node, type YAMLMap } from 'yaml';
import { PIVOT_DRIVERS, type PivotDriver } from '../ignition/fragments.js';
import { parseSize } from '../steps/units.js';
import { NODE_DEFAULTS } from './defaults.js';
import { type DocumentReader, type MappingFields, scalarLike } from './reader.js';
import type { ImageSource, NodeDef, OscontainerSource } from './types.js';

const NODE_KEYS = ['image', 'memory', 'vcpus', 'firmware', 'driver', 'pivot', 'kernel-args', 'ignition'];

/** The nodes, in file order; an image or oscontainer named `fixture:N` is defined on first use. */
export function readNodes(
  r: DocumentReader,
  node: Node | null,
  images: Map<string, ImageSource>,
  oscontainers: Map<string, OscontainerSource>,
): NodeDef[] {
  const map = r.map(node, 'nodes');
  if (map.items.length === 0) r.fail(node, 'nodes needs at least one node');
  const out: NodeDef[] = [];
  for (const pair of map.items) {
    r.guard(() => {
      const name = r.name(pair.key as Node, 'node name');
      const what = `node '${name}'`;
      const value = pair.value as Node | null;
      const f =
        value === null || (isScalar(value) && value.value === null)
          ? (new Map() as MappingFields)
          : r.fields(value, what, NODE_KEYS);
      const v = (key: string) => f.get(key)?.value ?? null;
      const fixtureImage = (version: string): ImageSource => ({ kind: 'fixture', version });
      const image = f.has('image')
        ? r.ref(v('image'), `${what} image`, images, fixtureImage)
        : r.ref(scalarLike('fixture:1'), `${what} image`, images, fixtureImage);
      let memoryMiB: number = NODE_DEFAULTS.memoryMiB;
      if (f.has('memory')) {
        const raw = isScalar(v('memory')) ? (v('memory') as { value: unknown }).value : undefined;
        const bytes = typeof raw === 'string' || typeof raw === 'number' ? parseSize(raw, 1024 ** 2) : undefined;
        if (bytes === undefined || bytes < 256 * 1024 ** 2)
          r.fail(v('memory'), `${what} memory must be a size of at least 256MiB like 1024 (MiB) or 2GiB`);
        memoryMiB = Math.round(bytes / 1024 ** 2);
      }
      const vcpus = f.has('vcpus') ? r.integer(v('vcpus'), `${what} vcpus`, 1, 64) : NODE_DEFAULTS.vcpus;
      const firmware = f.has('firmware')
        ? r.oneOf(v('firmware'), `${what} firmware`, ['bios', 'uefi'] as const)
        : NODE_DEFAULTS.firmware;
      const driver: PivotDriver = f.has('driver')
        ? r.oneOf(v('driver'), `${what} driver`, PIVOT_DRIVERS)
        : NODE_DEFAULTS.driver;
      const pivot = f.has('pivot')
        ? r.ref(v('pivot'), `${what} pivot target oscontainer`, oscontainers, (version) => ({
            kind: 'build-fixture',
            version,
          }))
        : undefined;
      const kernelArgs = { add: [] as string[], delete: [] as string[] };
      if (f.has('kernel-args')) {
        const ka = r.fields(v('kernel-args'), `${what} kernel-args`, ['add', 'delete']);
        if (ka.has('add')) kernelArgs.add = r.stringList(ka.get('add')!.value, `${what} kernel-args.add`);
        if (ka.has('delete')) kernelArgs.delete = r.stringList(ka.get('delete')!.value, `${what} kernel-args.delete`);
        if (driver !== 'legacy' && kernelArgs.add.length + kernelArgs.delete.length > 0)
          r.fail(v('kernel-args'), `${what} kernel-args need the legacy driver (it reads /etc/pivot/kernel-args)`);
      }
      let ignition: Record<string, unknown> | undefined;
      if (f.has('ignition')) {
        r.map(v('ignition'), `${what} ignition`);
        ignition = (v('ignition') as YAMLMap).toJSON() as Record<string, unknown>;
      }
      if (out.some((other) => other.name === name)) r.fail(pair.key as Node, `node '${name}' is defined twice`);
      out.push({
        name,
        image,
        memoryMiB,
        vcpus,
        firmware,
        driver,
        ...(pivot ? { pivot } : {}),
        kernelArgs,
        ...(ignition ? { ignition } : {}),
        pos: r.at(pair.key as Node),
      });
    });
  }
  if (out.length === 0 && r.issues.length === 0) r.fail(node, 'nodes needs at least one node');
  return out;
}
