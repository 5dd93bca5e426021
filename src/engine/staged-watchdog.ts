/**
 * A node whose pivot staged a deployment and then never rebooted is a failure with a name, not a timeout at the
 * next `expect`. The classifier reports the phases (`guest.pivot`); this watch, which needs time, reports the
 * missing reboot: after `staged`, a node that shows no `rebooting` phase, reboot, stop or crash within the grace
 * period gets a `guest.failure` naming the likely cause. The grace counts from the node's last console line, not
 * from `staged`: a guest still printing is still working (a bootc node's shutdown, with ostree-finalize-staged,
 * printed for 27 s before its reboot marker on a loaded 2-core host), and a slower host only stretches that; a node
 * that stages and goes quiet is named as before.
 *
 * The cause named is the driver's `noRebootReason` (src/drivers/): for legacy, pivot's missing reboot-needed file.
 */
import type { EventBus } from '../core/bus.js';
import type { Stamped } from '../core/events.js';
import { DRIVERS, type PivotDriver } from '../drivers/index.js';
import { formatDuration } from '../steps/units.js';

/**
 * From `staged` (or the node's last console line after it) to a sign of the reboot: the tool's own clean-up,
 * seconds (the fixture's pivot under TCG: "Staging deployment...done" at 45.5 s, `systemctl reboot` at 47.3 s),
 * with a wide margin for a loaded host.
 */
export const STAGED_GRACE_MS = 2 * 60_000;

export class StagedWatchdog {
  readonly #timers = new Map<string, { timer: NodeJS.Timeout; target: string }>();
  /** Boots seen per node (each start and reboot): only a first boot runs mcd-write-pivot-reboot.service. */
  readonly #boots = new Map<string, number>();

  constructor(
    readonly bus: EventBus,
    /** Each node's driver (the cause named depends on it). */
    readonly drivers: ReadonlyMap<string, PivotDriver>,
    readonly graceMs = STAGED_GRACE_MS,
  ) {}

  /** Every bus event (subscribe it for the run; `dispose` at its end). */
  observe(event: Stamped): void {
    if (!('node' in event) || typeof event.node !== 'string' || !this.drivers.has(event.node)) return;
    const node = event.node;
    switch (event.kind) {
      case 'guest.pivot':
        if (event.phase === 'staged') this.#arm(node, event.target);
        else if (event.phase === 'rebooting') this.#disarm(node);
        return;
      case 'vm.reboot':
      case 'vm.started':
        this.#boots.set(node, (this.#boots.get(node) ?? 0) + 1);
        this.#disarm(node);
        return;
      case 'vm.stopped':
      case 'vm.crashed':
        this.#disarm(node);
        return;
      case 'vm.console': {
        const watch = this.#timers.get(node);
        if (watch) this.#start(node, watch.target);
        return;
      }
      default:
        return;
    }
  }

  /** devpivot itself asked the node to reboot (the `pivot` step, as the machine-config daemon did). */
  rebootRequested(node: string): void {
    this.#disarm(node);
  }

  dispose(): void {
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  #arm(node: string, target: string): void {
    if (!this.#timers.has(node)) this.#start(node, target);
  }

  /** (Re)start the node's grace period. */
  #start(node: string, target: string): void {
    clearTimeout(this.#timers.get(node)?.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(node);
      this.bus.emit({ kind: 'guest.failure', node, reason: this.#reason(node, target), line: '' });
    }, this.graceMs);
    timer.unref();
    this.#timers.set(node, { timer, target });
  }

  #disarm(node: string): void {
    clearTimeout(this.#timers.get(node)?.timer);
    this.#timers.delete(node);
  }

  #reason(node: string, target: string): string {
    const what = `the pivot staged ${target || 'a deployment'} but ${node} did not reboot within ${formatDuration(this.graceMs)}`;
    const driver = this.drivers.get(node)!;
    return DRIVERS[driver].noRebootReason({ what, node, boots: this.#boots.get(node) ?? 1 });
  }
}
