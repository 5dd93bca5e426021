/**
 * A node whose boot chain refused a signature (`guest.failure` with cause `secure-boot`) never boots on its own:
 * GRUB prints the refusal, waits its 10 s busy loop (`grub_wait_after_message`) and tries the same entry again,
 * for ever, on a host core. Once devpivot has named the failure, the node is paused (VmNode.pause): its console and
 * disk stay as they are, the rest of the run gets the CPU back. Measured: 98 of the refused node's 264 core-seconds
 * in corrupt-oscontainer went to that loop (bench/RESULTS.md).
 */
import type { EventBus } from '../core/bus.js';
import type { Stamped } from '../core/events.js';
import type { NodeWatches } from './node-watch.js';

export class RefusedBootPause {
  readonly #paused = new Set<string>();

  constructor(
    private readonly bus: EventBus,
    private readonly watches: NodeWatches,
  ) {}

  observe(event: Stamped): void {
    // Started again (a power cycle): it may be refused again.
    if (event.kind === 'vm.started') this.#paused.delete(event.node);
    if (event.kind !== 'guest.failure' || event.cause !== 'secure-boot') return;
    const vm = this.watches.get(event.node).vm;
    if (!vm || this.#paused.has(event.node)) return;
    this.#paused.add(event.node);
    vm.pause().then(
      () =>
        this.bus.emit({
          kind: 'log',
          level: 'info',
          source: 'engine',
          message: `node ${event.node} paused: its boot was refused and GRUB would retry it for ever (virsh resume ${vm.domain} lets it go on)`,
        }),
      (error: Error) =>
        this.bus.emit({
          kind: 'log',
          level: 'warn',
          source: 'engine',
          message: `node ${event.node}: could not pause it after its refused boot: ${error.message}`,
        }),
    );
  }
}
