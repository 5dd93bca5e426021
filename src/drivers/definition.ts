/**
 * What a pivot driver is: everything that differs between `legacy`, `mcd`, `rpm-ostree` and `bootc`, in one record
 * per driver (one file of this folder each, registered in `index.ts`). Scenario validation, the Ignition
 * generator, the engine and `devpivot ignition` look their facts up here and never test a driver's name.
 */
import type { Fragment, KernelArg } from '../ignition/fragment.js';
import type { SpecVersion } from '../ignition/spec.js';
import type { OscontainerFormat } from '../oci/format.js';

/** The Ignition specs a driver's guests read, and what a node gets without `ignition-spec:`. */
export interface DriverSpecs {
  default: SpecVersion;
  /** The spec majors the driver's guests read. */
  majors: readonly number[];
  /** Who they are, for messages. */
  guests: string;
}

/** Which kernel-argument edits the driver can make on the new deployment; `refusal` says why not, for messages. */
export interface KernelArgCapability {
  add: boolean;
  delete: boolean;
  /** `<node> kernel-args <message>` when a list the driver cannot apply is given. */
  refusal?: { message: string; hint?: string };
}

/** Node keys only some drivers accept (besides the common ones of scenario/nodes-section.ts). */
export type DriverNodeKey = 'mco-image';

export interface FragmentOptions {
  /** The machine-config-operator image, for a driver whose `nodeKeys` has `mco-image`. */
  mcoImage?: string;
}

/** Turns a value into one single-quoted shell word. */
export type Quote = (value: string) => string;

/** What a staged-but-not-rebooted pivot is told (engine/staged-watchdog.ts). */
export interface NoRebootContext {
  /** "the pivot staged X but N did not reboot within D". */
  what: string;
  node: string;
  /** Boots of the node seen so far (1 on the first). */
  boots: number;
}

/**
 * How a driver's tool makes the node boot its previous deployment (the `rollback` step): `request` gives the
 * commands run as root over ssh, which reboot through the tool's own flag, as on a real node; `written` matches the
 * line the tool prints once the new order is written (after it, a dropped connection is the reboot).
 */
export interface DriverRollback {
  request(quote: Quote): string[];
  written: RegExp;
}

/**
 * How a driver's node moves to a newer image of the stream it follows (the `upgrade` step). `tag`: the tool
 * resolves the tag its origin names again (`bootc upgrade`, `rpm-ostree upgrade`), so a node's Ignition may name a
 * tag (`follow:`); `digest`: the tool takes only pullspecs by digest, so an upgrade is a new request for the digest
 * the tag names now (as a new osImageURL is), and `follow:` is refused. `request` gives the commands, run as root
 * over ssh (the reboot follows when they staged a deployment); `pullspec` is the tag's digest for `digest` drivers.
 */
export interface DriverUpgrade {
  follows: 'tag' | 'digest';
  /** Why the driver follows digests only, for messages. */
  why?: string;
  request(pullspec: string, quote: Quote): string[];
  /** Staged now, applied later, where the tool can (src/drivers/staged-later.ts); else why not, for messages. */
  later: DriverStagedLater | { refused: string };
}

/**
 * An upgrade staged finalization-locked and applied later: `stage` gives the commands that stage the image the
 * followed tag names now without applying it at shutdown; `apply` those that unlock it and reboot into it (`digest`:
 * the image's manifest digest, which rpm-ostree checks against the staged deployment). Run as root over ssh.
 */
export interface DriverStagedLater {
  stage(): string[];
  apply(digest: string, quote: Quote): string[];
}

export interface DriverDefinition {
  /** The oscontainer formats the driver's guest tool accepts (scenario/compatibility.ts). */
  formats: readonly OscontainerFormat[];
  specs: DriverSpecs;
  kernelArgs: KernelArgCapability;
  nodeKeys: readonly DriverNodeKey[];
  /**
   * Whether the tool this driver models reads a native image's zstd layers (ostree-ext's tar+zstd reader, 2024;
   * docs/PROTOCOLS.md "Layer compression"): a scenario's native builds are zstd only when every node that takes
   * native images reads them.
   */
  readsZstdLayers: boolean;
  /**
   * Where the driver's guest tool reads the registry pull secret (auth.json format); devpivot writes the node's
   * there, mode 0600, when the registry requires credentials (docs/PROTOCOLS.md "Trust").
   */
  pullSecretPaths: readonly string[];
  /** The files and units that make the first boot pivot to `image` (throws a UsageError on what it cannot do). */
  fragment(image: string, kernelArgs: KernelArg[], options: FragmentOptions): Fragment;
  /**
   * The commands a later `pivot` step runs over ssh as root to ask for `pullspec` (engine/ssh-pivot.ts adds the
   * reboot after them when a deployment was staged).
   */
  secondRequest(pullspec: string, quote: Quote): string[];
  /** Why a pivot that staged a deployment did not reboot: the `guest.failure` reason. */
  noRebootReason(context: NoRebootContext): string;
  rollback: DriverRollback;
  upgrade: DriverUpgrade;
}
