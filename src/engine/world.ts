/**
 * What a run made and holds (the World), what prepare needs (its context), and each node as prepared; with the
 * names and addresses derived from them.
 */
import type { EventBus } from '../core/bus.js';
import type { DriverDefinition } from '../drivers/index.js';
import { localRepository, parseLocalSource } from '../oci/local-source.js';
import { parseReference } from '../oci/reference.js';
import { looksLikePullspec } from '../scenario/pullspec.js';
import type { NodeDef, Scenario } from '../scenario/types.js';
import type { VmHost } from '../vm/host.js';
import type { Deps, FixtureArtifacts, PushedImage, RegistryHandle } from './deps.js';
import { isLoopbackHost, type RemoteHost } from './remote-host.js';
import type { SessionAccess } from './ssh-access.js';

/** What a run made and holds: prepare fills it, steps use it, cleanup removes it. */
export interface World {
  registry?: RegistryHandle;
  registryUrl?: string;
  host?: VmHost;
  fixture?: Promise<FixtureArtifacts>;
  /** Oscontainers in the registry, by scenario name. */
  readonly images: Map<string, PushedImage>;
  /** A local qcow2 per image name. */
  readonly disks: Map<string, string>;
  /** Each node, prepared (by node name). */
  readonly nodes: Map<string, PreparedNode>;
  /** Commit first booted by a node of each non-fixture image (what `booted: <image>` means for it). */
  readonly imageCommits: Map<string, string>;
  /** The session's ssh key, ssh forwards and guest network filters. */
  access?: SessionAccess;
  /** The registry as guests reach it: `10.0.2.2:PORT` (the main port; nodes use `nodeRegistry`). */
  guestRegistry?: string;
  /**
   * The registry as each node reaches it: the embedded one on the node's own port, `10.0.2.2:NODEPORT`, so its
   * events name the node; an external registry is the same `guestRegistry` for every node.
   */
  readonly nodeRegistry: Map<string, string>;
  /** Oscontainers the guest names by their upstream repository (mirror mode, engine/mirror.ts), by scenario name. */
  readonly guestNames: Map<string, string>;
  /** The ssh tunnel to a remote libvirt host (`qemu+ssh://`), closed at cleanup. */
  remote?: RemoteHost;
  /** Tags devpivot pointed in the embedded registry (`follow:`, `tag` steps): `REPO:TAG` → oscontainer name. */
  readonly tags: Map<string, string>;
}

export function emptyWorld(): World {
  return {
    images: new Map(),
    disks: new Map(),
    nodes: new Map(),
    imageCommits: new Map(),
    guestNames: new Map(),
    nodeRegistry: new Map(),
    tags: new Map(),
  };
}

export interface PrepareContext {
  scenario: Scenario;
  deps: Deps;
  bus: EventBus;
  /** The run's signal (Ctrl-C, the scenario's timeout). */
  signal: AbortSignal;
  stateDir: string;
  cacheDir: string;
  uri?: string;
  sessionId?: string;
  /** Fails the running scenario (the ssh tunnel to a remote host ended mid-run). */
  onFatal?: (error: Error) => void;
}

/**
 * Everything about one node that prepare works out, built once: `EngineRuntime.up` creates the VM from it.
 * (The guest network, the node's filter socket and ssh forward, comes from `world.access.forNode` at `up`.)
 */
export interface PreparedNode {
  def: NodeDef;
  /** Its pivot driver's definition (src/drivers/). */
  driver: DriverDefinition;
  /** The local qcow2 of its image. */
  disk: string;
  /** Its Ignition config, as JSON. */
  ignition: string;
  /** The registry as this node reaches it (`10.0.2.2:NODEPORT`, or the external registry). */
  registry: string;
  /** Whether the session's ssh key and forward are needed (a step of the scenario reaches a node over ssh). */
  needsSsh: boolean;
}

/**
 * Repository for an oscontainer in our registry: `fixture:2` -> devpivot/fixture-2. A pivot target written as a
 * pullspec keeps its repository path: `127.0.0.1:5000/os/rhcos@sha256:…` -> devpivot/os/rhcos.
 */
export function repositoryName(name: string): string {
  const local = parseLocalSource(name);
  if (local) return `devpivot/${localRepository(local)}`;
  if (looksLikePullspec(name)) return `devpivot/${parseReference(name).repository}`;
  return `devpivot/${name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}`;
}

/**
 * The pullspec `node` uses for an oscontainer, by digest: the upstream name in mirror mode (the node's drop-in
 * sends it to the embedded registry, on the node's port), else the embedded registry as the node reaches it.
 */
export function guestPullspec(world: World, name: string, node: string): string {
  const image = world.images.get(name)!;
  const registry = world.nodeRegistry.get(node) ?? world.guestRegistry;
  const repository = world.guestNames.get(name) ?? `${registry}/${repositoryName(name)}`;
  return `${repository}@${image.digest}`;
}

/** The pullspec `node` uses for a tag of the embedded registry (`REPO:TAG`), as a tag-following tool names it. */
export function guestTagPullspec(world: World, ref: string, node: string): string {
  return `${world.nodeRegistry.get(node) ?? world.guestRegistry}/${ref}`;
}

/** host:port of a registry as the guest reaches it: the host's loopback is 10.0.2.2 under user networking. */
export function guestHostPort(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  const host = isLoopbackHost(parsed.hostname) ? '10.0.2.2' : parsed.hostname;
  return `${host}:${port}`;
}
