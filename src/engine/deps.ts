import type { EventBus } from '../core/bus.js';
import type { PivotDriver } from '../drivers/index.js';
import type { Fixture } from '../fixture/fixture.js';
import type { HealthCheck } from '../ignition/health-check.js';
import type { RegistryFaults, StartRegistryOptions } from '../registry/index.js';
import type { VmHost } from '../vm/host.js';
import type { HostKey } from './host-keys.js';
import type { SessionKey } from './ssh.js';

/**
 * Everything the engine drives, as one interface it receives. The engine imports the registry, oscontainer,
 * Ignition, VM and fixture modules for their types only: `real-deps.ts` wires the real ones, and the engine's unit
 * tests pass a fake VM host. Keep these shapes small: they are the contracts between the areas.
 */
export interface RegistryHandle {
  /** http://127.0.0.1:PORT, or https:// with `tls` */
  readonly url: string;
  /** With `tls`: the CA (PEM) that signed its certificate, and another one that did not (`registry-ca: other`). */
  readonly tls?: { caPem: string; otherCaPem?: string };
  /** With `auth`: the credentials it requires. */
  readonly credentials?: { username: string; password: string };
  readonly port: number;
  /** Mutable: the engine's `fault` steps set and clear these while the registry runs. */
  readonly faults: RegistryFaults;
  /** Stop listening (an outage, or the end of the run). */
  stop(): Promise<void>;
  /** Listen again on the same port after stop() (the node ports too). */
  start(): Promise<void>;
  /**
   * One more loopback port for `node`'s requests (docs/ARCHITECTURE.md "Per-node ports"): the same registry, its
   * events carrying `node`. Returns the port.
   */
  addNodePort(node: string): Promise<number>;
}

/** The embedded registry as the engine starts it: on loopback only, with its storage directory and the bus. */
export type LoopbackRegistryOptions = Required<Pick<StartRegistryOptions, 'port' | 'storage' | 'bus'>> & {
  host: '127.0.0.1';
  /** Mirror mode with an upstream: fill misses under these repository paths from it (engine/mirror.ts). */
  pullThrough?: { upstream: string; paths: string[] };
  /** HTTPS on every port, its CA and certificate made in `dir`; `otherCa`: one more CA, for `registry-ca: other`. */
  tls?: { dir: string; otherCa: boolean };
  /** Require credentials (made for the run) on every port. */
  auth?: boolean;
};

/** What an oscontainer is built from: a commit of an ostree repository, or a root filesystem tree. */
export type CommitOrRootfs = { repo: string; commit: string } | { rootfs: string; version?: string };

/** An oscontainer in the registry, always referenced by digest. */
export interface PushedImage {
  /** sha256:... of the manifest. */
  digest: string;
  /** The ostree commit it carries (label com.coreos.ostree-commit). */
  commit: string;
  /** Its version label. */
  version: string;
  /**
   * `native` for an ostree-native (bootable) image, whose booted commit is the guest's merge commit and not
   * `commit`: nodes are matched to it by `digest` (docs/PROTOCOLS.md, rpm-ostree "On-disk effects and identity").
   */
  format?: 'legacy' | 'native';
  /**
   * When `digest` names an index: its linux/amd64 image's digest (oci/platform.ts), which a booted native node
   * reports (bootc and rpm-ostree store the image they pulled, the child), so nodes are matched to it.
   */
  instance?: string;
  /** The layers' digests, in manifest order, when devpivot built the image. */
  layers?: string[];
}

export interface BuildOscontainerOptions {
  source: CommitOrRootfs;
  /** docs/PROTOCOLS.md "Oscontainer formats"; legacy when omitted. */
  format?: 'legacy' | 'native';
  /** native: the layers' compression (gzip when omitted). */
  compression?: 'gzip' | 'zstd';
  /** native: chunk into this many layers, by the packages `components` lists (the fixture's). */
  layers?: number;
  components?: string;
  /** Registry base URL on this host, e.g. http://127.0.0.1:5000 */
  registry: string;
  /** Repository name within the registry, e.g. devpivot/fixture-2 */
  repository: string;
  bus: EventBus;
  signal: AbortSignal;
}

export interface BuildDerivedOptions {
  /** The Containerfile (`ARG BASE`, `FROM $BASE`) and its build context. */
  containerfile: string;
  context: string;
  /** The base as this host pulls it: `127.0.0.1:PORT/repo@sha256:…`. */
  base: string;
  registry: string;
  repository: string;
  bus: EventBus;
  signal: AbortSignal;
}

export interface PullOscontainerOptions {
  /** Where the image is now, e.g. quay.io/org/os@sha256:... */
  ref: string;
  registry: string;
  repository: string;
  /** Of an index, only these platforms' images (`os/arch[/variant]`); without, the whole index. */
  platforms?: readonly string[];
  bus: EventBus;
  signal: AbortSignal;
}

export interface ResolveOscontainerOptions {
  /** The image at the upstream: `host:port/repo:tag` or `@sha256:…`. */
  ref: string;
  /** The upstream's base URL (http:// or https://). */
  upstream: string;
  /** The embedded registry's URL: it pulls the manifest and the config through from the upstream. */
  registry: string;
  repository: string;
  /** Read the layers through the cache too (the cache then holds the whole image); false: `prefetch: false`. */
  layers: boolean;
  bus: EventBus;
  signal: AbortSignal;
}

export interface IgnitionRequest {
  driver: PivotDriver;
  /** The pullspec the guest uses: 10.0.2.2:PORT/repo@sha256:... */
  image?: string;
  /** The Ignition spec to write: the node's (the engine always passes it); the generator's default when omitted. */
  spec?: string;
  registry: {
    hostPort: string;
    insecure: boolean;
    mirrors?: { prefix: string; path: string }[];
    /** The CA the guest trusts for the registry's certificate (TLS). */
    caPem?: string;
    /** The node's pull secret (auth.json format), written where its driver's tools read one. */
    pullSecret?: string;
  };
  kernelArgs?: { add: string[]; delete: string[] };
  /** Public keys for the `core` user (`passwd.users`), on every node, with or without a pivot target. */
  sshKeys?: string[];
  /** sshd's host keys for the node (engine/host-keys.ts): written to /etc/ssh, pinned in the session's known_hosts. */
  hostKeys?: HostKey[];
  /** A fragment merged into the generated config. */
  extra?: Record<string, unknown>;
  /** Driver `mcd`: the MCO image the units run, as the guest reaches it. */
  mcoImage?: string;
  /** `health-check:` greenboot on the node: its boot attempts and a required check (name and contents). */
  healthCheck?: HealthCheck;
}

/** Point `repository:tag` of the embedded registry at the manifest `from` (`REPO@sha256:…`) names there. */
export interface TagOscontainerOptions {
  /** The registry's URL (http://127.0.0.1:PORT). */
  registry: string;
  from: string;
  repository: string;
  tag: string;
  bus: EventBus;
  signal: AbortSignal;
}

export interface PushMcoImageOptions {
  /** The registry's URL (http://127.0.0.1:PORT). */
  registry: string;
  repository: string;
  bus: EventBus;
  signal: AbortSignal;
}

/** What the engine uses of a built fixture OS: the first version's disk, the ostree repository, the versions. */
export type FixtureArtifacts = Pick<Fixture, 'disk' | 'repo' | 'versions' | 'components'>;

export interface Deps {
  startRegistry(options: LoopbackRegistryOptions): Promise<RegistryHandle>;
  buildOscontainer(options: BuildOscontainerOptions): Promise<PushedImage>;
  pullOscontainer(options: PullOscontainerOptions): Promise<PushedImage>;
  /** podman build of a derived image FROM an oscontainer of the run, pushed to the run's registry. */
  buildDerived(options: BuildDerivedOptions): Promise<PushedImage>;
  /**
   * Mirror mode with an upstream: the digest and labels of an upstream image, read through the embedded registry's
   * pull-through cache, with its layers (a `pull:`) or without them (`prefetch: false`: they reach the cache when a
   * node first asks).
   */
  resolveOscontainer(options: ResolveOscontainerOptions): Promise<PushedImage>;
  /** What a CI push of a tag does: the tag names the image now (a copy inside the registry, same digest). */
  tagOscontainer(options: TagOscontainerOptions): Promise<void>;
  generateIgnition(request: IgnitionRequest): object;
  /** Build the fixture's MCO image (its MCD stand-in, reproducibly) and push it; the manifest digest. */
  pushMcoImage(options: PushMcoImageOptions): Promise<{ digest: string }>;
  openHost(options: { uri?: string; sessionId?: string; bus: EventBus }): Promise<VmHost>;
  loadFixture(options: { bus: EventBus; signal: AbortSignal }): Promise<FixtureArtifacts>;
  /** The session's ssh key pair (made once per session, kept in its state directory). */
  sessionKey(options: { stateDir: string; sessionId: string }): Promise<SessionKey>;
  /** A node's ssh host keys, one per type sshd-keygen makes (made anew each call; work files under `tempParent`);
   * `signal` stops the making at once. */
  hostKeys(tempParent: string, signal: AbortSignal): Promise<HostKey[]>;
}
