/** Ignition spec versions devpivot writes, and how to compare them. */
import { UsageError } from '../core/errors.js';

/**
 * 3.0.0–3.3.0 (what Ignition 2.14, Debian's and the fixture's, accepts as stable; 3.4.0 needs Ignition ≥ 2.15)
 * and 2.2.0 for old RHCOS (4.1–4.5), whose Ignition 0.x reads only spec 2.
 */
export const SPEC_VERSIONS = ['2.2.0', '3.0.0', '3.1.0', '3.2.0', '3.3.0'] as const;
export type SpecVersion = (typeof SPEC_VERSIONS)[number];
/** The oldest spec 3 that has everything devpivot emits: the widest set of guests reads it. */
export const DEFAULT_SPEC: SpecVersion = '3.0.0';

export function isSpecVersion(value: string): value is SpecVersion {
  return (SPEC_VERSIONS as readonly string[]).includes(value);
}

export function parseSpecVersion(value: string): SpecVersion {
  if (isSpecVersion(value)) return value;
  throw new UsageError(
    `unsupported Ignition spec version '${value}'`,
    `use one of ${SPEC_VERSIONS.join(', ')} (2.2.0 for RHCOS 4.1–4.5, 3.x for later RHCOS, FCOS and the fixture)`,
    'IGNITION_SPEC',
  );
}

export function majorOf(version: string): number {
  return Number(version.split('.')[0]);
}

/** Compare `x.y.z` versions numerically (pre-release suffixes sort before the release). */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [core = '', pre] = v.split('-');
    return { parts: core.split('.').map(Number), pre };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) {
    const d = (x.parts[i] ?? 0) - (y.parts[i] ?? 0);
    if (d !== 0) return d;
  }
  if (x.pre && !y.pre) return -1;
  if (!x.pre && y.pre) return 1;
  return 0;
}
