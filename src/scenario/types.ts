/** The scenario document, parsed: what `parseScenario` returns and the engine runs. */
import type { Firmware } from '../core/firmware.js';
import type { PivotDriver } from '../drivers/index.js';
import type { SpecVersion } from '../ignition/spec.js';
import type { Step } from '../steps/index.js';
import type { Position } from '../steps/reader.js';

export type ImageSource =
  | { kind: 'fixture'; version: string }
  | { kind: 'path'; path: string; sha256?: string }
  | { kind: 'url'; url: string; sha256: string };

import type { LayerCompression, OscontainerFormat } from '../oci/format.js';

export type { LayerCompression, OscontainerFormat } from '../oci/format.js';

/** A built oscontainer's `format` is `legacy` when the scenario does not say. */
export type OscontainerSource =
  /** `unsignedKernel`: its kernel's signature removed (`kernel: unsigned`, engine/unsigned-kernel.ts). */
  | {
      kind: 'build-fixture';
      version: string;
      format?: OscontainerFormat;
      /** native: the layers' compression (`compression:`); prepare picks one when the scenario does not. */
      compression?: LayerCompression;
      unsignedKernel?: true;
      /** native: chunked into this many layers (ostree-ext's max layers). */
      layers?: number;
    }
  | { kind: 'build-ostree'; repo: string; commit: string; format?: OscontainerFormat; compression?: LayerCompression }
  | {
      kind: 'build-rootfs';
      rootfs: string;
      version?: string;
      format?: OscontainerFormat;
      compression?: LayerCompression;
    }
  /** Built by podman from a Containerfile `FROM $BASE`, BASE being oscontainer `from` (scenario/derived-section.ts). */
  | { kind: 'build-containerfile'; containerfile: string; context: string; from: string }
  /** `prefetch: false` (mirror mode with an upstream): not copied ahead; the nodes pull it through the cache. */
  | { kind: 'pull'; ref: string; prefetch?: false; platforms?: string[] };

/** Mirror mode (docs/PROTOCOLS.md "Mirror mode"): guests keep upstream pullspecs under these prefixes. */
export interface MirrorSpec {
  prefixes: { prefix: string; path: string }[];
  /** Registry base URL the embedded registry pulls through from (and `pull:` fills from). */
  upstream?: string;
}

export type RegistrySpec =
  | {
      kind: 'embedded';
      mirror?: MirrorSpec;
      /** HTTPS with a CA devpivot makes, carried to every node (registry/tls.ts). */
      tls?: true;
      /** Credentials required; every node is given a pull secret (registry/auth.ts). */
      auth?: true;
    }
  | { kind: 'external'; url: string };

export interface NodeDef {
  name: string;
  /** Key into Scenario.images. */
  image: string;
  memoryMiB: number;
  vcpus: number;
  firmware: Firmware;
  /** An emulated TPM 2.0 (`tpm: true`): libvirt runs swtpm, its state kept with the node. */
  tpm: boolean;
  driver: PivotDriver;
  /** Key into Scenario.oscontainers; undefined = the node boots and stays where it is. */
  pivot?: string;
  kernelArgs: { add: string[]; delete: string[] };
  /**
   * The Ignition spec version the node's config is written in: `ignition-spec:`, or the driver's default raised to
   * the fragment's version (scenario/ignition-spec.ts).
   */
  ignitionSpec: SpecVersion;
  /** An Ignition config fragment merged into the generated one. */
  ignition?: Record<string, unknown>;
  /** `mco-image:` (driver mcd): the MCO image pullspec the units run; unset = the fixture's, built by devpivot. */
  mcoImage?: string;
  /**
   * `follow: REPO:TAG`: the node's Ignition names this tag of the embedded registry (pointed at `pivot` before the
   * node starts) instead of the digest, so an `upgrade` step follows the tag; tag-following drivers only.
   */
  follow?: string;
  /** `registry-ca: other` (registry tls): the node is given a CA that did not sign the registry's certificate. */
  registryCa?: 'other';
  /** `pull-secret: false` (registry auth): the node is given no pull secret. */
  pullSecret?: false;
  /** `health-check:` greenboot on: its boot attempts and a required check of the user's (scenario/health-check.ts). */
  healthCheck?: NodeHealthCheck;
  pos: Position;
}

export interface NodeHealthCheck {
  /** GREENBOOT_MAX_BOOT_ATTEMPTS, 1 to 9. */
  attempts: number;
  /** Absolute path of a `.sh` check, written to /etc/greenboot/check/required.d/ under its own name. */
  script?: string;
}

export interface Scenario {
  /** Path as given (for messages). */
  file: string;
  name: string;
  description?: string;
  /** Deadline for the whole run. */
  timeoutMs: number;
  images: Map<string, ImageSource>;
  oscontainers: Map<string, OscontainerSource>;
  registry: RegistrySpec;
  nodes: NodeDef[];
  steps: Step[];
}
