/**
 * The end of every run (success, failure, deadline, Ctrl-C): remove the VMs unless kept, close the VM host, stop
 * the registry. Each part has its own deadline and none depends on the run's signal; a part that fails is a
 * warning on the bus, never an exception.
 */
import type { EventBus } from '../core/bus.js';
import { PHASE_DEADLINES, withDeadline } from './deadline.js';
import type { NodeWatches } from './node-watch.js';
import type { World } from './prepare.js';

export async function cleanupRun(
  world: World,
  watches: NodeWatches,
  keep: () => boolean,
  bus: EventBus,
): Promise<void> {
  const never = new AbortController().signal;
  const quiet = async (what: string, work: () => Promise<void>) => {
    try {
      await withDeadline(what, PHASE_DEADLINES.cleanup, never, work);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      bus.emit({ kind: 'log', level: 'warn', source: 'engine', message: `${what}: ${message}` });
    }
  };
  const host = world.host;
  if (host) {
    if (!keep()) {
      // Each node we created by its own handle first, then whatever else the session holds.
      for (const watch of watches.all()) {
        const vm = watch.vm;
        if (vm) await quiet(`removing node ${watch.def.name}`, () => vm.destroy());
      }
      await quiet('removing the VMs', () => host.destroyAll());
      const access = world.access;
      if (access) await quiet("removing the session's ssh key", () => access.removeKey());
    }
    await quiet('closing the libvirt connection', () => host.close());
  }
  const registry = world.registry;
  if (registry) await quiet('stopping the registry', () => registry.stop());
  // The guests' network filters live as long as the registry they lead to.
  const access = world.access;
  if (access) await quiet('closing the guest network', () => access.close());
}
