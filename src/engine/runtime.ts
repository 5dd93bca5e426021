/**
 * The engine's side of the steps' runtime interface (`src/steps/runtime.ts`): node actions on the VM host with
 * their deadlines, the waits on node logs, the registry's fault switches, what nodes reported.
 */
import { type NodeLogEvent, type RegistryControl, StepFailure, type StepRuntime } from '../steps/runtime.js';
import { abandonWarning, PHASE_DEADLINES, withDeadline } from './deadline.js';
import type { NodeWatches } from './node-watch.js';
import type { World } from './prepare.js';

export class EngineRuntime implements StepRuntime {
  constructor(
    readonly world: World,
    readonly watches: NodeWatches,
    /** The run's signal: actions stop when the run is stopped. */
    readonly signal: AbortSignal,
    /** The caller's signal only (Ctrl-C): `down` still finishes when the scenario's timeout ran out. */
    readonly removalSignal: AbortSignal,
  ) {}

  async waitFor(
    node: string,
    match: (event: NodeLogEvent) => boolean,
    ms: number,
    what: string,
    options: { expectFailureOn?: string } = {},
  ): Promise<NodeLogEvent> {
    return (await this.watches.waitFor(node, match, ms, what, options))!;
  }

  async pause(ms: number): Promise<void> {
    await this.watches.waitFor(undefined, () => false, ms, 'wait', { timeoutOk: true });
  }

  async up(name: string): Promise<void> {
    const watch = this.watches.get(name);
    if (watch.vm) throw new StepFailure(`node ${name} is already up`);
    const def = watch.def;
    const host = this.world.host!;
    // The node is recorded as soon as it exists, so cleanup removes it even when the run stops right then.
    await withDeadline(
      `defining node ${name}`,
      PHASE_DEADLINES.createNode,
      this.signal,
      async (signal) => {
        watch.vm = await host.createNode(
          {
            name,
            image: this.world.diskOf.get(def.image)!,
            ignition: this.world.ignitionOf.get(name)!,
            memoryMiB: def.memoryMiB,
            vcpus: def.vcpus,
            firmware: def.firmware,
          },
          signal,
        );
      },
      abandonWarning(this.watches.bus),
    );
    const vm = watch.vm!;
    watch.cursor = watch.log.length;
    await withDeadline(`starting node ${name}`, PHASE_DEADLINES.startNode, this.signal, () => vm.start());
  }

  async powerCycle(name: string, restart: boolean): Promise<void> {
    const watch = this.watches.get(name);
    const vm = watch.vm;
    if (!vm) throw new StepFailure(`node ${name} is not up`);
    await withDeadline(`powering off ${name}`, PHASE_DEADLINES.powerOff, this.signal, () => vm.powerOff());
    watch.cursor = watch.log.length;
    if (restart) await withDeadline(`starting node ${name}`, PHASE_DEADLINES.startNode, this.signal, () => vm.start());
  }

  async down(): Promise<void> {
    const host = this.world.host;
    if (!host) return;
    for (const watch of this.watches.all()) {
      const vm = watch.vm;
      if (vm)
        await withDeadline(`removing node ${watch.def.name}`, PHASE_DEADLINES.cleanup, this.removalSignal, () =>
          vm.destroy(),
        );
      watch.vm = undefined;
    }
    await withDeadline('removing the VMs', PHASE_DEADLINES.cleanup, this.removalSignal, () => host.destroyAll());
  }

  registry(): RegistryControl | undefined {
    const registry = this.world.registry;
    if (!registry) return undefined;
    const signal = this.signal;
    return {
      faults: registry.faults,
      stop: () => withDeadline('stopping the registry', PHASE_DEADLINES.registry, signal, () => registry.stop()),
      start: () => withDeadline('restarting the registry', PHASE_DEADLINES.registry, signal, () => registry.start()),
    };
  }

  /** The ostree commit an oscontainer carries, or that an image boots. */
  commitOf(name: string): string | undefined {
    return this.world.images.get(name)?.commit ?? this.world.imageCommits.get(name);
  }

  boots(node: string): readonly { version: string; commit: string }[] {
    return this.watches.get(node).boots();
  }

  failures(node: string): readonly { reason: string }[] {
    return this.watches.get(node).failures.map((failure) => failure.event);
  }
}
