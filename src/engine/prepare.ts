/**
 * The `prepare` step: start the registry (or use the external one), build or mirror the oscontainers, resolve the
 * images, generate each node's Ignition and connect to the VM host. Everything it makes lands in the run's World
 * as soon as it exists, so cleanup can undo a preparation that failed half-way.
 */
import { join } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { DRIVERS, type DriverDefinition } from '../drivers/index.js';
import { parseReference } from '../oci/reference.js';
import { looksLikePullspec } from '../scenario/pullspec.js';
import type { NodeDef, OscontainerSource, Scenario } from '../scenario/types.js';
import { stepNeedsSsh } from '../steps/index.js';
import { guestFilterDir } from '../vm/guest-filter.js';
import type { VmHost } from '../vm/host.js';
import { newSessionId } from '../vm/sessions.js';
import { abandonWarning, PHASE_DEADLINES, withDeadline } from './deadline.js';
import type { Deps, FixtureArtifacts, PushedImage, RegistryHandle } from './deps.js';
import { fixtureVersion, resolveImage } from './images.js';
import { mirroredPull } from './mirror.js';
import {
  isLoopbackHost,
  openRemoteHost,
  type RemoteHost,
  remoteDestination,
  remoteGuestAddress,
} from './remote-host.js';
import { SessionAccess } from './ssh-access.js';

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
}

export function emptyWorld(): World {
  return {
    images: new Map(),
    disks: new Map(),
    nodes: new Map(),
    imageCommits: new Map(),
    guestNames: new Map(),
    nodeRegistry: new Map(),
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

export async function prepare(context: PrepareContext, world: World): Promise<void> {
  // Before anything starts: a remote host that devpivot cannot tunnel to is a set-up error.
  const remote = remoteDestination(context.uri);
  // What each phase makes is recorded in the World inside its work: a phase stopped right after it made
  // something still leaves it to cleanup (withDeadline waits for the work to settle).
  await startRegistry(context, world);
  await prepareOscontainers(context, world);
  await prepareDisks(context, world);
  await assignNodeRegistries(context, world);
  // The session id is known before the host opens: the nodes' Ignition carries the session's ssh key.
  const sessionId = context.sessionId ?? newSessionId();
  if (remote) await tunnelToRemote(context, world, remote, sessionId);
  const needsSsh = context.scenario.steps.some((step) => stepNeedsSsh(step));
  await prepareAccess(context, world, remote, sessionId, needsSsh);
  const fixtureMco = await pushFixtureMco(context, world);
  for (const def of context.scenario.nodes) {
    world.nodes.set(def.name, {
      def,
      driver: DRIVERS[def.driver],
      disk: world.disks.get(def.image)!,
      ignition: renderIgnition(context, world, def, fixtureMco),
      registry: world.nodeRegistry.get(def.name)!,
      needsSsh,
    });
  }
  await openHost(context, world, sessionId);
}

async function startRegistry(context: PrepareContext, world: World): Promise<void> {
  const { deps, bus, signal } = context;
  const spec = context.scenario.registry;
  if (spec.kind !== 'embedded') {
    world.registryUrl = spec.url;
    return;
  }
  await withDeadline(
    'starting the registry',
    PHASE_DEADLINES.registry,
    signal,
    async () => {
      const mirror = spec.mirror;
      world.registry = await deps.startRegistry({
        host: '127.0.0.1',
        port: 0,
        storage: join(context.stateDir, 'registry'),
        bus,
        ...(mirror?.upstream
          ? { pullThrough: { upstream: mirror.upstream, paths: mirror.prefixes.map((p) => p.path) } }
          : {}),
      });
      world.registryUrl = world.registry.url;
    },
    abandonWarning(bus),
  );
}

async function prepareOscontainers(context: PrepareContext, world: World): Promise<void> {
  for (const [name, source] of context.scenario.oscontainers) {
    world.images.set(name, await oscontainer(context, world, world.registryUrl!, name, source));
  }
}

/** One local disk per image the nodes boot, and the commits `booted: fixture:N` means. */
async function prepareDisks(context: PrepareContext, world: World): Promise<void> {
  const { scenario, bus, signal } = context;
  for (const def of scenario.nodes) {
    if (world.disks.has(def.image)) continue;
    const source = scenario.images.get(def.image)!;
    const disk = await withDeadline(`preparing image '${def.image}'`, PHASE_DEADLINES.image, signal, (signal) =>
      resolveImage(def.image, source, {
        fixture: () => loadFixture(context, world),
        cacheDir: context.cacheDir,
        signal,
        bus,
      }),
    );
    world.disks.set(def.image, disk);
  }
  for (const [name, source] of scenario.images) {
    if (source.kind === 'fixture')
      world.imageCommits.set(name, fixtureVersion(await loadFixture(context, world), source.version).commit);
  }
}

/**
 * A port of its own per node on the embedded registry: guests of user-mode networking all come from 127.0.0.1,
 * the port is what names the node in the registry's events.
 */
async function assignNodeRegistries(context: PrepareContext, world: World): Promise<void> {
  const guestRegistry = guestHostPort(world.registryUrl!);
  world.guestRegistry = guestRegistry;
  const registry = world.registry;
  for (const def of context.scenario.nodes) {
    const hostPort = registry
      ? guestHostPort(`http://127.0.0.1:${await registry.addNodePort(def.name)}`)
      : guestRegistry;
    world.nodeRegistry.set(def.name, hostPort);
  }
}

/**
 * On a remote host the guests' 10.0.2.2 is that host: the registry's ports and the filters' sockets are forwarded
 * there over ssh, and the guests are told the ports there (docs/ARCHITECTURE.md "Remote hosts").
 */
async function tunnelToRemote(
  context: PrepareContext,
  world: World,
  remote: NonNullable<ReturnType<typeof remoteDestination>>,
  sessionId: string,
): Promise<void> {
  const { bus, signal } = context;
  const guestRegistry = world.guestRegistry!;
  const localPorts = [
    ...new Set(
      [guestRegistry, ...world.nodeRegistry.values()].flatMap((hostPort) => {
        const match = /^10\.0\.2\.2:(\d+)$/.exec(hostPort);
        return match ? [Number(match[1])] : [];
      }),
    ),
  ];
  if (localPorts.length === 0) return;
  world.remote = await openRemoteHost({
    destination: remote,
    sessionId,
    localPorts,
    filterNodes: context.scenario.nodes.map((def) => def.name),
    localSocketDir: guestFilterDir(sessionId),
    bus,
    signal,
    onLost: (error) => {
      bus.emit({ kind: 'log', level: 'error', source: 'engine', message: error.message });
      context.onFatal?.(error);
    },
  });
  const { remotePorts } = world.remote;
  world.guestRegistry = remoteGuestAddress(guestRegistry, remotePorts);
  for (const [node, hostPort] of world.nodeRegistry)
    world.nodeRegistry.set(node, remoteGuestAddress(hostPort, remotePorts));
}

async function prepareAccess(
  context: PrepareContext,
  world: World,
  remote: ReturnType<typeof remoteDestination>,
  sessionId: string,
  needsSsh: boolean,
): Promise<void> {
  world.access = await SessionAccess.prepare({
    sessionId,
    stateDir: context.stateDir,
    guestRegistry: world.guestRegistry!,
    nodeRegistry: world.nodeRegistry,
    bus: context.bus,
    needsSsh,
    sessionKey: (options) => context.deps.sessionKey(options),
    // ssh reaches a remote node through the URI's login even when nothing was tunnelled (an external registry).
    ...(remote ? { remote: { via: remote, sockets: world.remote?.filterSockets ?? new Map() } } : {}),
  });
  await world.access.reserve(context.scenario.nodes.map((def) => def.name));
}

/** The fixture's MCO image, once, for the nodes whose driver runs one and that name none (docs/PROTOCOLS.md "mcd"). */
async function pushFixtureMco(
  context: PrepareContext,
  world: World,
): Promise<((hostPort: string) => string) | undefined> {
  const { deps, bus, signal } = context;
  if (!context.scenario.nodes.some((def) => takesMcoImage(def) && def.pivot && !def.mcoImage)) return undefined;
  const { digest } = await withDeadline('pushing the MCO image', PHASE_DEADLINES.oscontainer, signal, (signal) =>
    deps.pushMcoImage({ registry: world.registryUrl!, repository: MCO_REPOSITORY, bus, signal }),
  );
  return (hostPort) => `${hostPort}/${MCO_REPOSITORY}@${digest}`;
}

function renderIgnition(
  context: PrepareContext,
  world: World,
  def: NodeDef,
  fixtureMco: ((hostPort: string) => string) | undefined,
): string {
  const spec = context.scenario.registry;
  const mirrors = spec.kind === 'embedded' ? spec.mirror?.prefixes : undefined;
  const hostPort = world.nodeRegistry.get(def.name)!;
  const sshKeys = world.access?.key ? [world.access.key.publicKey] : [];
  const mcoImage = def.mcoImage ?? fixtureMco?.(hostPort);
  const config = context.deps.generateIgnition({
    driver: def.driver,
    ...(def.pivot ? { image: guestPullspec(world, def.pivot, def.name) } : {}),
    spec: def.ignitionSpec,
    registry: {
      hostPort,
      insecure: world.registryUrl!.startsWith('http:'),
      ...(mirrors?.length ? { mirrors } : {}),
    },
    ...(def.kernelArgs.add.length + def.kernelArgs.delete.length > 0 ? { kernelArgs: def.kernelArgs } : {}),
    ...(sshKeys.length > 0 ? { sshKeys } : {}),
    ...(def.ignition ? { extra: def.ignition } : {}),
    ...(takesMcoImage(def) && def.pivot ? { mcoImage } : {}),
  });
  return JSON.stringify(config);
}

async function openHost(context: PrepareContext, world: World, sessionId: string): Promise<void> {
  await withDeadline(
    'connecting to libvirt',
    PHASE_DEADLINES.host,
    context.signal,
    async () => {
      world.host = await context.deps.openHost({
        ...(context.uri ? { uri: context.uri } : {}),
        sessionId,
        bus: context.bus,
      });
    },
    abandonWarning(context.bus),
  );
}

/** The fixture OS, built (or found in the cache) once per run, and only when something needs it. */
function loadFixture(context: PrepareContext, world: World): Promise<FixtureArtifacts> {
  world.fixture ??= withDeadline('preparing the fixture OS images', PHASE_DEADLINES.fixture, context.signal, (signal) =>
    context.deps.loadFixture({ bus: context.bus, signal }),
  );
  return world.fixture;
}

async function oscontainer(
  context: PrepareContext,
  world: World,
  registry: string,
  name: string,
  source: OscontainerSource,
): Promise<PushedImage> {
  const { deps, bus } = context;
  const repository = repositoryName(name);
  return withDeadline(
    `preparing oscontainer '${name}'`,
    PHASE_DEADLINES.oscontainer,
    context.signal,
    async (signal) => {
      switch (source.kind) {
        case 'build-fixture': {
          const fixture = await loadFixture(context, world);
          const commit = fixtureVersion(fixture, source.version).commit;
          return deps.buildOscontainer({
            source: { repo: fixture.repo, commit },
            ...format(source),
            registry,
            repository,
            bus,
            signal,
          });
        }
        case 'build-ostree':
          return deps.buildOscontainer({
            source: { repo: source.repo, commit: source.commit },
            ...format(source),
            registry,
            repository,
            bus,
            signal,
          });
        case 'build-rootfs':
          return deps.buildOscontainer({
            source: { rootfs: source.rootfs, ...(source.version ? { version: source.version } : {}) },
            ...format(source),
            registry,
            repository,
            bus,
            signal,
          });
        case 'pull': {
          const scenarioRegistry = context.scenario.registry;
          const mirrored = mirroredPull(
            scenarioRegistry.kind === 'embedded' ? scenarioRegistry.mirror : undefined,
            source.ref,
          );
          if (mirrored) world.guestNames.set(name, mirrored.guestName);
          // Through the pull-through cache when there is an upstream (validation made sure `prefetch: false` has one).
          const upstream = scenarioRegistry.kind === 'embedded' ? scenarioRegistry.mirror?.upstream : undefined;
          if (mirrored && upstream) {
            const layers = source.prefetch !== false;
            const image = await deps.resolveOscontainer({
              ref: mirrored.source,
              upstream,
              registry,
              repository: mirrored.repository,
              layers,
              bus,
              signal,
            });
            if (layers) return image;
            bus.emit({
              kind: 'log',
              level: 'info',
              source: 'registry',
              message: `${mirrored.guestName}@${image.digest}: manifest and config cached; its layers are fetched from the upstream when a node first asks (prefetch: false)`,
            });
            return image;
          }
          return deps.pullOscontainer({
            ref: mirrored?.source ?? source.ref,
            registry,
            repository: mirrored?.repository ?? repository,
            bus,
            signal,
          });
        }
      }
    },
  );
}

const format = (source: { format?: 'legacy' | 'native' }) => (source.format ? { format: source.format } : {});

/** Where the fixture's MCO image is pushed (outside devpivot/, where oscontainers go, so no name collides). */
export const MCO_REPOSITORY = 'devpivot-fixture/mco';

/**
 * Repository for an oscontainer in our registry: `fixture:2` -> devpivot/fixture-2. A pivot target written as a
 * pullspec keeps its repository path: `127.0.0.1:5000/os/rhcos@sha256:…` -> devpivot/os/rhcos.
 */
export function repositoryName(name: string): string {
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

/** host:port of a registry as the guest reaches it: the host's loopback is 10.0.2.2 under user networking. */
export function guestHostPort(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  const host = isLoopbackHost(parsed.hostname) ? '10.0.2.2' : parsed.hostname;
  return `${host}:${port}`;
}

/** A node whose driver runs an MCO image (the fixture's when the scenario names none). */
function takesMcoImage(def: NodeDef): boolean {
  return DRIVERS[def.driver].nodeKeys.includes('mco-image');
}
