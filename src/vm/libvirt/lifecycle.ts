import type { EventOf } from '../../core/events.js';
import { LifecycleEvent } from './connection.js';

/** The vm.* events a libvirt domain event becomes. */
export type LifecycleOutput =
  | EventOf<'vm.started'>
  | EventOf<'vm.stopped'>
  | EventOf<'vm.crashed'>
  | EventOf<'vm.reboot'>;

/** Two REBOOT events of one domain closer than this are one guest reboot (libvirt sends two ~60 ms apart). */
export const REBOOT_MERGE_MS = 1000;

/** virDomainEventStoppedDetailType, by value. */
const STOP_REASONS = ['shutdown', 'destroyed', 'crashed', 'migrated', 'saved', 'failed', 'restored from snapshot'];
/** virDomainEventCrashedDetailType, by value. */
const CRASH_REASONS = ['panicked', 'crashloaded'];
const STOPPED_SHUTDOWN = 0;
const STOPPED_CRASHED = 2;
const STOPPED_DESTROYED = 1;

/** The two halves of a cold restart after a guest reboot (LibvirtNode.restartAfterReboot, startAfterReset). */
export type RestartPart = 'stop' | 'start';

/**
 * Translates libvirt's lifecycle and reboot callbacks of one connection into vm.* events, keeping the little
 * per-domain state that needs: the cause of a coming stop (SHUTDOWN precedes STOPPED), whether a crash was
 * already reported, whether the guest just reset (its stop is then a reboot), and the time of the last REBOOT.
 * This is where the VmHost contract's "exactly one `vm.reboot` per guest reboot" and "one `vm.crashed` per crash"
 * are kept; consumers do not de-duplicate. Pure apart from the clock it is given, so the rules are unit-tested without libvirt.
 */
export class LifecycleTranslator {
  readonly #shutdownCause = new Map<string, string>();
  /** Domains that reported a CRASHED event: their following STOPPED(crashed) is not a second crash. */
  readonly #crashReported = new Set<string>();
  readonly #lastReboot = new Map<string, number>();
  /** Domains whose guest reset and whose QEMU is stopping for it (live on_reboot `destroy`): the stop is a reboot. */
  readonly #resetting = new Set<string>();
  /** Per domain, the STOPPED(destroyed) and STARTED events a cold restart after a guest reboot will cause. */
  readonly #restart = new Map<string, Record<RestartPart, number>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A lifecycle callback (`event` a LifecycleEvent, `detail` its detail type) of `domain`, which is `node`. */
  lifecycle(node: string, domain: string, event: number, detail: number): LifecycleOutput[] {
    const base = { node, domain };
    switch (event) {
      case LifecycleEvent.started:
        this.#shutdownCause.delete(domain);
        this.#crashReported.delete(domain);
        this.#resetting.delete(domain);
        if (this.#consume(domain, 'start')) return [];
        return [{ kind: 'vm.started', ...base }];
      case LifecycleEvent.shutdown:
        this.#shutdownCause.set(
          domain,
          detail === 1 ? 'guest shut down' : detail === 2 ? 'host shut down' : 'shutdown',
        );
        return [];
      case LifecycleEvent.stopped: {
        if (detail === STOPPED_DESTROYED && this.#consume(domain, 'stop')) return [];
        const reset = this.#resetting.delete(domain);
        if (reset && detail === STOPPED_SHUTDOWN) {
          this.#shutdownCause.delete(domain);
          return [{ kind: 'vm.reboot', ...base }];
        }
        const reason =
          detail === STOPPED_SHUTDOWN
            ? (this.#shutdownCause.get(domain) ?? 'shutdown')
            : (STOP_REASONS[detail] ?? `detail ${detail}`);
        this.#shutdownCause.delete(domain);
        const out: LifecycleOutput[] = [];
        if (detail === STOPPED_CRASHED && !this.#crashReported.has(domain))
          out.push({ kind: 'vm.crashed', ...base, reason: 'crashed' });
        out.push({ kind: 'vm.stopped', ...base, reason });
        return out;
      }
      case LifecycleEvent.crashed:
        this.#crashReported.add(domain);
        return [{ kind: 'vm.crashed', ...base, reason: CRASH_REASONS[detail] ?? `detail ${detail}` }];
      default:
        return [];
    }
  }

  /**
   * A cold restart of `domain` after its guest rebooted is about to destroy (`stop`) or start (`start`) it: the
   * STOPPED(destroyed) or STARTED event that call causes is not reported, since to the engine a guest reboot is
   * neither a stop nor a start (the VmHost contract). Called before the call; `cancel` when the call failed.
   */
  expectRestart(domain: string, part: RestartPart): void {
    const pending = this.#restart.get(domain) ?? { stop: 0, start: 0 };
    pending[part]++;
    this.#restart.set(domain, pending);
  }

  /** The call announced with expectRestart failed: no event will come for it. */
  cancelRestart(domain: string, part: RestartPart): void {
    this.#consume(domain, part);
  }

  #consume(domain: string, part: RestartPart): boolean {
    const pending = this.#restart.get(domain);
    if (!pending || pending[part] === 0) return false;
    pending[part]--;
    if (pending.stop === 0 && pending.start === 0) this.#restart.delete(domain);
    return true;
  }

  /**
   * QEMU reports that the guest of `domain` reset and, its live on_reboot being `destroy`, stops instead (libvirt
   * then ends the process): the STOPPED(shutdown) that follows is this guest reboot, reported as one `vm.reboot`;
   * the caller boots the node again. A stop for another reason (destroyed meanwhile) stays a stop.
   */
  guestReset(domain: string): void {
    this.#resetting.add(domain);
  }

  /** A REBOOT callback: one guest reboot raises two (the guest's reset, then qemu's), ~60 ms apart. */
  reboot(node: string, domain: string): LifecycleOutput[] {
    const now = this.#now();
    const last = this.#lastReboot.get(domain);
    this.#lastReboot.set(domain, now);
    if (last !== undefined && now - last < REBOOT_MERGE_MS) return [];
    return [{ kind: 'vm.reboot', node, domain }];
  }
}
