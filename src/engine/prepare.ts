/**
 * The `prepare` step: start the registry (or use the external one), build or mirror the oscontainers, resolve the
 * images, generate each node's Ignition and connect to the VM host. Everything it makes lands in the run's World
 * as soon as it exists, so cleanup can undo a preparation that failed half-way.
 */
import { readFileSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { privateDir } from '../core/private-dir.js';
import { DRIVERS } from '../drivers/index.js';
import type { HealthCheck } from '../ignition/health-check.js';
import { pullSecret } from '../registry/auth.js';
import type { NodeDef, NodeHealthCheck } from '../scenario/types.js';
import { stepNeedsSsh } from '../steps/index.js';
import { guestFilterDir } from '../vm/guest-filter.js';
import { newSessionId, sessionDir } from '../vm/sessions.js';
import { abandonWarning, PHASE_DEADLINES, withDeadline } from './deadline.js';
import { type HostKey, writesHostKeys } from './host-keys.js';
import { fixtureVersion, resolveImage } from './images.js';
import { loadFixture, oscontainer } from './prepare-oscontainers.js';
import { openRemoteHost, remoteDestination, remoteGuestAddress } from './remote-host.js';
import { removeSessionKey, sessionSshDir } from './ssh.js';
import { SessionAccess } from './ssh-access.js';
import { pointFollowedTags } from './tags.js';
import { guestHostPort, guestPullspec, guestTagPullspec, type PrepareContext, type World } from './world.js';

export {
  emptyWorld,
  guestHostPort,
  guestPullspec,
  type PrepareContext,
  type PreparedNode,
  repositoryName,
  type World,
} from './world.js';

export async function prepare(context: PrepareContext, world: World): Promise<void> {
  // Before anything starts: a remote host that devpivot cannot tunnel to is a set-up error.
  const remote = remoteDestination(context.uri);
  // The session id is known before the host opens: the nodes' Ignition carries the session's ssh key.
  const sessionId = context.sessionId ?? newSessionId();
  // The nodes' host keys are made beside the phases below (a second of ssh-keygen each, off the critical path).
  const keysMade = makeHostKeys(context, sessionId);
  try {
    await preparePhases(context, world, remote, sessionId, keysMade);
  } catch (error) {
    // The session's ssh directory is prepare's own until the session access owns it (cleanup removes it then).
    if (!world.access) {
      await keysMade;
      await removeSessionKey(context.stateDir, sessionId);
      await rmdir(sessionDir(context.stateDir, sessionId)).catch(() => {});
    }
    throw error;
  }
}

async function preparePhases(
  context: PrepareContext,
  world: World,
  remote: ReturnType<typeof remoteDestination>,
  sessionId: string,
  keysMade: Promise<Map<string, HostKey[]> | Error>,
): Promise<void> {
  // What each phase makes is recorded in the World inside its work: a phase stopped right after it made
  // something still leaves it to cleanup (withDeadline waits for the work to settle).
  await startRegistry(context, world);
  await prepareOscontainers(context, world);
  await prepareDisks(context, world);
  await assignNodeRegistries(context, world);
  if (remote) await tunnelToRemote(context, world, remote, sessionId);
  const needsSsh = context.scenario.steps.some((step) => stepNeedsSsh(step));
  await prepareAccess(context, world, remote, sessionId, needsSsh);
  const hostKeys = await pinHostKeys(world, await keysMade);
  const fixtureMco = await pushFixtureMco(context, world);
  await pointFollowedTags(context, world);
  for (const def of context.scenario.nodes) {
    world.nodes.set(def.name, {
      def,
      driver: DRIVERS[def.driver],
      disk: world.disks.get(def.image)!,
      ignition: renderIgnition(context, world, def, fixtureMco, hostKeys.get(def.name)),
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
        ...(spec.tls
          ? {
              tls: {
                dir: join(context.stateDir, 'registry-tls'),
                otherCa: context.scenario.nodes.some((def) => def.registryCa === 'other'),
              },
            }
          : {}),
        ...(spec.auth ? { auth: true } : {}),
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

/**
 * Each node's ssh host keys (engine/host-keys.ts), made in parallel; never rejects: a failure is the result, for
 * `pinHostKeys` to throw or ignore. None for a node whose own Ignition config writes host keys (its keys win the
 * merge; ssh then learns them at first contact). ssh-keygen writes them in the session's private ssh directory
 * (removed with the session), so a process that ends half-way leaves no private key in a shared temporary one.
 */
function makeHostKeys(context: PrepareContext, sessionId: string): Promise<Map<string, HostKey[]> | Error> {
  const nodes = context.scenario.nodes.filter((def) => !writesHostKeys(def.ignition));
  const dir = sessionSshDir(context.stateDir, sessionId);
  return withDeadline("making the nodes' ssh host keys", PHASE_DEADLINES.hostKeys, context.signal, async (signal) => {
    await privateDir(dir);
    return Promise.all(nodes.map(async (def) => [def.name, await context.deps.hostKeys(dir, signal)] as const));
  }).then(
    (made) => new Map(made),
    (error: Error) => error,
  );
}

/**
 * Record the keys made for the nodes in the session's known_hosts, before any node boots; the keys their Ignition
 * writes. None when the session has no ssh key (ssh-keygen is missing: nothing logs in).
 */
async function pinHostKeys(world: World, made: Map<string, HostKey[]> | Error): Promise<Map<string, HostKey[]>> {
  const access = world.access;
  if (!access?.key) return new Map();
  if (made instanceof Error) throw made;
  // One after the other: each rewrites the session's known_hosts.
  for (const [node, keys] of made)
    await access.pinHostKeys(
      node,
      keys.map((key) => key.publicKey),
    );
  return made;
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

/**
 * What a node's Ignition names: a `follow:` tag for a driver whose tool follows tags (the tool resolves it, as
 * `bootc switch IMAGE:TAG` does), else the target by digest (legacy and mcd take digests only).
 */
function pivotImage(world: World, def: NodeDef): string {
  if (def.follow && DRIVERS[def.driver].upgrade.follows === 'tag') return guestTagPullspec(world, def.follow, def.name);
  return guestPullspec(world, def.pivot!, def.name);
}

function renderIgnition(
  context: PrepareContext,
  world: World,
  def: NodeDef,
  fixtureMco: ((hostPort: string) => string) | undefined,
  hostKeys: HostKey[] | undefined,
): string {
  const spec = context.scenario.registry;
  const mirrors = spec.kind === 'embedded' ? spec.mirror?.prefixes : undefined;
  const hostPort = world.nodeRegistry.get(def.name)!;
  const sshKeys = world.access?.key ? [world.access.key.publicKey] : [];
  const mcoImage = def.mcoImage ?? fixtureMco?.(hostPort);
  const tls = world.registry?.tls;
  const caPem = def.registryCa === 'other' ? tls?.otherCaPem : tls?.caPem;
  const credentials = def.pullSecret === false ? undefined : world.registry?.credentials;
  const config = context.deps.generateIgnition({
    driver: def.driver,
    ...(def.pivot ? { image: pivotImage(world, def) } : {}),
    spec: def.ignitionSpec,
    registry: {
      hostPort,
      insecure: world.registryUrl!.startsWith('http:'),
      ...(mirrors?.length ? { mirrors } : {}),
      ...(caPem ? { caPem } : {}),
      ...(credentials ? { pullSecret: pullSecret(credentials, [hostPort]) } : {}),
    },
    ...(def.kernelArgs.add.length + def.kernelArgs.delete.length > 0 ? { kernelArgs: def.kernelArgs } : {}),
    ...(sshKeys.length > 0 ? { sshKeys } : {}),
    ...(hostKeys ? { hostKeys } : {}),
    ...(def.ignition ? { extra: def.ignition } : {}),
    ...(takesMcoImage(def) && def.pivot ? { mcoImage } : {}),
    ...(def.healthCheck ? { healthCheck: healthCheckOf(def.healthCheck) } : {}),
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

/** greenboot's settings for the node's Ignition, with the user's check read now (it was checked to exist). */
function healthCheckOf(check: NodeHealthCheck): HealthCheck {
  return {
    attempts: check.attempts,
    ...(check.script ? { script: { name: basename(check.script), contents: readFileSync(check.script, 'utf8') } } : {}),
  };
}

/** Where the fixture's MCO image is pushed (outside devpivot/, where oscontainers go, so no name collides). */
export const MCO_REPOSITORY = 'devpivot-fixture/mco';

/** A node whose driver runs an MCO image (the fixture's when the scenario names none). */
function takesMcoImage(def: NodeDef): boolean {
  return DRIVERS[def.driver].nodeKeys.includes('mco-image');
}
