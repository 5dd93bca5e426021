/**
 * Which pivot driver takes which oscontainer format (each driver's `formats`, src/drivers/): a
 * mismatch is refused by the guest's tool after a long boot and pull, so it is a scenario error instead. Only
 * what is known before anything runs is checked: the format of an oscontainer devpivot builds; a pulled image's
 * format is only known once it is in the registry.
 */
import { DRIVERS, type PivotDriver } from '../drivers/index.js';
import type { OscontainerFormat, OscontainerSource } from './types.js';

export type { OscontainerFormat } from './types.js';

/**
 * The format devpivot gives an oscontainer it builds (`format:` in the scenario, legacy by default, as
 * `devpivot build`); undefined when not known before the run (a pull).
 */
export function formatOf(source: OscontainerSource): OscontainerFormat | undefined {
  switch (source.kind) {
    case 'build-fixture':
    case 'build-ostree':
    case 'build-rootfs':
      return source.format ?? 'legacy';
    case 'pull':
    case 'build-containerfile':
      return undefined;
  }
}

/** Why `driver` cannot pivot to `source`, or undefined when it can (or it is not known yet). */
export function incompatibility(driver: PivotDriver, source: OscontainerSource): string | undefined {
  const format = formatOf(source);
  const { formats } = DRIVERS[driver];
  if (format === undefined || formats.includes(format)) return undefined;
  return `the ${driver} driver takes ${formats.join(' or ')} oscontainers; this one is built in the ${format} format`;
}
