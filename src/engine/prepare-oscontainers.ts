/**
 * prepare's oscontainer phase: each oscontainer of the scenario built from the fixture, an ostree repo or a rootfs,
 * or pulled (through the pull-through cache in mirror mode), into the run's registry.
 */

import { DRIVERS, type PivotDriver } from '../drivers/index.js';
import type { LayerCompression, OscontainerSource } from '../scenario/types.js';
import { PHASE_DEADLINES, withDeadline } from './deadline.js';
import type { FixtureArtifacts, PushedImage } from './deps.js';
import { fixtureVersion } from './images.js';
import { mirroredPull } from './mirror.js';
import { unsignedKernelRootfs } from './unsigned-kernel.js';
import { type PrepareContext, repositoryName, type World } from './world.js';

/** The fixture OS, built (or found in the cache) once per run, and only when something needs it. */
export function loadFixture(context: PrepareContext, world: World): Promise<FixtureArtifacts> {
  world.fixture ??= withDeadline('preparing the fixture OS images', PHASE_DEADLINES.fixture, context.signal, (signal) =>
    context.deps.loadFixture({ bus: context.bus, signal }),
  );
  return world.fixture;
}

export async function oscontainer(
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
          if (source.unsignedKernel) {
            const unsigned = await unsignedKernelRootfs(fixture.repo, commit, context.cacheDir, signal);
            return deps
              .buildOscontainer({
                source: { rootfs: unsigned.rootfs, version: source.version },
                ...shape(context, source),
                registry,
                repository,
                bus,
                signal,
              })
              .finally(() => unsigned.remove());
          }
          return deps.buildOscontainer({
            source: { repo: fixture.repo, commit },
            ...shape(context, source),
            ...(source.layers !== undefined ? { layers: source.layers, components: fixture.components } : {}),
            registry,
            repository,
            bus,
            signal,
          });
        }
        case 'build-ostree':
          return deps.buildOscontainer({
            source: { repo: source.repo, commit: source.commit },
            ...shape(context, source),
            registry,
            repository,
            bus,
            signal,
          });
        case 'build-rootfs':
          return deps.buildOscontainer({
            source: { rootfs: source.rootfs, ...(source.version ? { version: source.version } : {}) },
            ...shape(context, source),
            registry,
            repository,
            bus,
            signal,
          });
        case 'build-containerfile': {
          // The scenario reader made sure `from` is defined above this one: prepare has it already.
          const base = world.images.get(source.from)!;
          return deps.buildDerived({
            containerfile: source.containerfile,
            context: source.context,
            base: `${new URL(registry).host}/${repositoryName(source.from)}@${base.instance ?? base.digest}`,
            registry,
            repository,
            bus,
            signal,
          });
        }
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
            ...(source.platforms ? { platforms: source.platforms } : {}),
            bus,
            signal,
          });
        }
      }
    },
  );
}

/** A node whose driver takes native images reads zstd layers, or takes no native image at all. */
const readsZstd = (driver: PivotDriver) =>
  DRIVERS[driver].readsZstdLayers || !DRIVERS[driver].formats.includes('native');

/**
 * A build's format and layer compression. A native image's layers are zstd unless the scenario says `compression`
 * or has a node whose tool does not read zstd (the mcd driver: RHCOS 4.13's rpm-ostree; `readsZstdLayers`): zstd
 * decompresses in a third of gzip's guest time under TCG (bench/RESULTS.md), and the bootc and rpm-ostree the
 * stand-ins follow read it (docs/PROTOCOLS.md "Layer compression").
 */
function shape(
  context: PrepareContext,
  source: { format?: 'legacy' | 'native'; compression?: LayerCompression },
): { format?: 'legacy' | 'native'; compression?: LayerCompression } {
  const compression =
    source.compression ??
    (source.format === 'native' && context.scenario.nodes.every(({ driver }) => readsZstd(driver))
      ? 'zstd'
      : undefined);
  return { ...(source.format ? { format: source.format } : {}), ...(compression ? { compression } : {}) };
}
