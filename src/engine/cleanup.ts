/**
 * The end of every run (success, failure, deadline, Ctrl-C): remove the VMs unless kept, close the VM host, stop
 * the registry. Each part has its own deadline and none depends on the run's signal; a part that fails is a
 * warning on the bus, never an exception. A kept run that is served (`--keep` in the foreground) keeps its host
 * and registry too, until `releaseRun`.
 */
import type { EventBus } from '../core/bus.js';
import { PHASE_DEADLINES, withDeadline } from './deadline.js';
import type { NodeWatches } from './node-watch.js';
import type { World } from './prepare.js';

function quietly(bus: EventBus): (what: string, work: () => Promise<void>) => Promise<void> {
  const never = new AbortController().signal;
  return async (what, work) => {
    try {
      await withDeadline(what, PHASE_DEADLINES.cleanup, never, work);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      bus.emit({ kind: 'log', level: 'warn', source: 'engine', message: `${what}: ${message}` });
    }
  };
}

/** Remove every node the run created (by its handle first, then whatever else the session holds). */
export async function removeNodes(world: World, watches: NodeWatches, bus: EventBus): Promise<void> {
  const quiet = quietly(bus);
  const host = world.host;
  // Without a VM host (prepare stopped before it opened) there is no node, but the session's key exists already.
  if (host) {
    for (const watch of watches.all()) {
      const vm = watch.vm;
      if (vm) await quiet(`removing node ${watch.def.name}`, () => vm.destroy());
      watch.vm = undefined;
    }
    await quiet('removing the VMs', () => host.destroyAll());
  }
  const access = world.access;
  if (access) await quiet("removing the session's ssh key", () => access.removeKey());
}

/** A kept run keeps the nodes that ran: one defined but never started is removed, not claimed as kept. */
async function removeNeverStarted(watches: NodeWatches, bus: EventBus): Promise<void> {
  const quiet = quietly(bus);
  for (const watch of watches.all()) {
    const vm = watch.vm;
    if (!vm || watch.started()) continue;
    await quiet(`removing node ${watch.def.name}, which never started`, () => vm.destroy());
    watch.vm = undefined;
  }
}

/** Close the VM host and stop the registry: nothing of the run is left running in this process. */
export async function releaseWorld(world: World, bus: EventBus): Promise<void> {
  const quiet = quietly(bus);
  const host = world.host;
  if (host) await quiet('closing the libvirt connection', () => host.close());
  const registry = world.registry;
  if (registry) await quiet('stopping the registry', () => registry.stop());
  // The guests' network filters live as long as the registry they lead to.
  const access = world.access;
  if (access) await quiet('closing the guest network', () => access.close());
  const remote = world.remote;
  if (remote) await quiet(`closing the ssh tunnel to ${remote.host}`, () => remote.close());
}

export async function cleanupRun(
  world: World,
  watches: NodeWatches,
  options: { keep: boolean; hold: boolean },
  bus: EventBus,
): Promise<void> {
  if (!options.keep) await removeNodes(world, watches, bus);
  else await removeNeverStarted(watches, bus);
  if (options.keep && options.hold) return;
  await releaseWorld(world, bus);
}
