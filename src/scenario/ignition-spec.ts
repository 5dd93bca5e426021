/**
 * A node's `ignition-spec:`: the Ignition spec version devpivot writes for it, checked against what the guests of
 * its driver read, with a default per driver. Ignition itself decides what a guest reads: Ignition 0.x (RHCOS
 * 4.1–4.5) reads spec 2.x only; Ignition 2.x (RHCOS ≥ 4.6, every Fedora CoreOS, the fixture's Debian 2.14) reads
 * spec 3.x only: coreos/ignition `config/config.go` (eea4ec6b) parses the 3.x versions it knows and answers every
other one, spec 2 included, with ErrUnknownVersion.
 */
import { DRIVERS, type PivotDriver } from '../drivers/index.js';
import { chooseSpec } from '../ignition/generate.js';
import { compareVersions, majorOf, SPEC_VERSIONS, type SpecVersion } from '../ignition/spec.js';

/**
 * Spec 3.0.0 is the default everywhere: every Ignition 2.x reads it (it is the only 3.x that Ignition 2.0–2.2
 * reads), it holds everything devpivot writes, and it is what the fixture (Ignition 2.14) has always been given.
 * The legacy driver's real guests, RHCOS 4.1–4.5, read spec 2.2.0: `ignition-spec: 2.2.0` for those images.
 * rpm-ostree (FCOS, RHCOS ≥ 4.12), bootc (FCOS ≥ 41) and mcd (RHCOS ≥ 4.6) guests run Ignition 2.x: spec 3 only.
 * Each driver's `specs` (src/drivers/) holds its default and majors.
 */
/** Why `driver`'s guests cannot read `spec`, or undefined when they can. */
export function specRefusal(driver: PivotDriver, spec: SpecVersion): string | undefined {
  const { majors, guests } = DRIVERS[driver].specs;
  if (majors.includes(majorOf(spec))) return undefined;
  return `the ${driver} driver's guests, ${guests}, read spec ${majors.join(' or ')} only`;
}

/** The versions a driver's node may ask for. */
export function specsOf(driver: PivotDriver): SpecVersion[] {
  return SPEC_VERSIONS.filter((spec) => specRefusal(driver, spec) === undefined);
}

/**
 * The spec a node gets: `explicit` when written; otherwise the driver's default, raised to the fragment's
 * `ignition.version` when that is newer (a 3.2.0 fragment needs at least 3.2.0), or 2.2.0 for a spec 2 fragment
 * (as `chooseSpec` raises it). Throws chooseSpec's IGNITION_SPEC_MISMATCH when the fragment does not fit.
 */
export function nodeSpec(
  driver: PivotDriver,
  explicit: SpecVersion | undefined,
  fragmentVersion: string | undefined,
): SpecVersion {
  const fallback = DRIVERS[driver].specs.default;
  if (fragmentVersion === undefined) return explicit ?? fallback;
  const chosen = chooseSpec(explicit, { ignition: { version: fragmentVersion } });
  if (explicit) return chosen;
  return majorOf(chosen) === majorOf(fallback) && compareVersions(fallback, chosen) > 0 ? fallback : chosen;
}
