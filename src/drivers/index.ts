/**
 * Every pivot driver, registered once. A driver is one file of this folder (its formats, Ignition specs,
 * kernel-argument capability, node keys, fragment, second request and no-reboot reason); this map is the only
 * list of them. A name in `PivotDriver` without a definition here, or a definition without a name, fails to
 * compile.
 */
import { bootc } from './bootc.js';
import type { DriverDefinition, DriverNodeKey } from './definition.js';
import { legacy } from './legacy.js';
import { mcd } from './mcd.js';
import { rpmOstree } from './rpm-ostree.js';

export type { DriverDefinition, DriverNodeKey } from './definition.js';

export type PivotDriver = 'legacy' | 'rpm-ostree' | 'bootc' | 'mcd';

/** The map of every driver to its definition (its order is the order messages list the drivers in). */
export const DRIVERS: { readonly [D in PivotDriver]: DriverDefinition } = {
  legacy,
  'rpm-ostree': rpmOstree,
  bootc,
  mcd,
};

/** Every driver, from the map (read when asked, so that a test's added driver counts). */
export function pivotDrivers(): PivotDriver[] {
  return Object.keys(DRIVERS) as PivotDriver[];
}

export function isPivotDriver(name: string): name is PivotDriver {
  return Object.hasOwn(DRIVERS, name);
}

export function driverOf(name: PivotDriver): DriverDefinition {
  return DRIVERS[name];
}

/** The drivers that accept `key` on a node, for messages. */
export function driversAllowing(key: DriverNodeKey): PivotDriver[] {
  return pivotDrivers().filter((name) => DRIVERS[name].nodeKeys.includes(key));
}
