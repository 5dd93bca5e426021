/**
 * What a step's run may do to the world: the engine implements this interface (`src/engine/runtime.ts`) over its
 * nodes, the VM host and the registry. Steps never touch a VM or the registry directly; every call here carries
 * its own deadline and stops when the run is stopped (Ctrl-C, the scenario's timeout).
 */
import type { DevpivotEvent, EventOf, Stamped } from '../core/events.js';
import type { RegistryFaults } from '../registry/index.js';

/** What a node's log holds, in the order the bus delivered it: its VM's events and what its guest said. */
export type NodeLogEvent = Stamped<
  | EventOf<'vm.console'>
  | EventOf<'vm.started'>
  | EventOf<'vm.reboot'>
  | EventOf<'vm.stopped'>
  | EventOf<'vm.crashed'>
  | Extract<DevpivotEvent, { kind: `guest.${string}` }>
>;

/** A step that did not hold: the run reports the message as the step's error and skips the steps after it. */
export class StepFailure extends Error {
  override name = 'StepFailure';
}

/** The embedded registry as a `fault` step drives it. */
export interface RegistryControl {
  /** Mutable while the registry runs: what it does to the blobs it serves. */
  readonly faults: RegistryFaults;
  /** Stop listening (an outage). */
  stop(): Promise<void>;
  /** Listen again on the same port. */
  start(): Promise<void>;
}

/** What a command run on a node over ssh gave: its exit status (255: ssh itself failed) and its output. */
export interface SshResult {
  /** null when it ran out of time. */
  code: number | null;
  /** stdout and stderr, interleaved as they came. */
  output: string;
}

/** ssh's exit status when it could not connect or log in. */
export const SSH_FAILED = 255;

export interface StepRuntime {
  /**
   * The first event of `node`'s log, from its cursor on, that `match`es; the cursor moves past it, so the next
   * wait on that node starts after it (events that came while another step ran still count). Every node's log
   * starts empty and grows by one entry per event, in bus order; a `guest.failure` it returns counts as expected.
   * Rejects with a StepFailure `<what>: not seen within <ms>` at the deadline, and with a StepFailure at once when
   * any node other than `expectFailureOn` reports a failure that no step expected (fail fast).
   */
  waitFor(
    node: string,
    match: (event: NodeLogEvent) => boolean,
    ms: number,
    what: string,
    options?: { expectFailureOn?: string },
  ): Promise<NodeLogEvent>;
  /** Let `ms` pass; fails at once, as waitFor does, when a node fails. */
  pause(ms: number): Promise<void>;
  /** Define and start a node (fails when it is already up); its cursor moves to the end of its log. */
  up(node: string): Promise<void>;
  /** Power a running node off (a hard stop), then on again when `restart`; its cursor moves past the stop. */
  powerCycle(node: string, restart: boolean): Promise<void>;
  /** Remove every node of the run (they are down afterwards; a later `up` may define them again). */
  down(): Promise<void>;
  /** The embedded registry, or undefined when the scenario uses an external one. */
  registry(): RegistryControl | undefined;
  /** The ostree commit an oscontainer carries or an image boots; undefined until known (an image's first boot). */
  commitOf(name: string): string | undefined;
  /**
   * The manifest digest an ostree-native oscontainer is identified by once booted (the guest's import writes a
   * merge commit, so its booted commit is not the image's); undefined for legacy oscontainers and images.
   */
  digestOf(name: string): string | undefined;
  /** The layers of oscontainer `name` (digests, manifest order) when devpivot built it; else undefined. */
  layersOf(name: string): readonly string[] | undefined;
  /**
   * The blobs (digests) `node` fetched whole from the embedded registry on its own port since its last `up`,
   * pivot or upgrade request, in order.
   */
  fetched(node: string): readonly string[];
  /** Every boot a node reported (`guest.booted`), oldest first. */
  boots(node: string): readonly { version: string; commit: string; image?: string }[];
  /** Every failure a node reported (`guest.failure`), expected or not, oldest first. */
  failures(node: string): readonly { reason: string }[];
  /**
   * Run a shell command line on a running node over ssh, as the `core` user (the session's key); stops with the
   * run. Rejects with a StepFailure when the node is not up or has no ssh access.
   */
  ssh(node: string, command: string, options: { timeoutMs: number }): Promise<SshResult>;
  /**
   * Make a running node pivot to an oscontainer the way a second machine-config-daemon request does (write the
   * pullspec, start the node's update unit, reboot when it staged a deployment: src/engine/ssh-pivot.ts); its
   * cursor moves to the end of its log first. Resolves once the request was handed over (the node may be
   * rebooting); rejects with a StepFailure when the node's update unit failed, or ssh never connected in time.
   */
  requestPivot(node: string, to: string, timeoutMs: number): Promise<void>;
  /**
   * Make a running node boot its previous deployment with its driver's rollback tool (src/drivers/rollback.ts),
   * which reboots it; its cursor moves to the end of its log first. Resolves once the tool wrote the new order;
   * rejects with a StepFailure when the tool refused (no rollback deployment, a staged one) or ssh never connected.
   */
  requestRollback(node: string, timeoutMs: number): Promise<void>;
  /** Point `ref` (`REPO:TAG`) of the embedded registry at oscontainer `name` (a `tag` step). */
  tagImage(name: string, ref: string): Promise<void>;
  /**
   * Make a running node that follows a tag upgrade to what the tag names now (its driver's upgrade, then a reboot
   * when it staged a deployment; with `downloadOnly`, staged finalization-locked and no reboot); its cursor moves to
   * the end of its log first. A tag that did not move is reported as `guest.pivot.skipped`; rejects with a StepFailure when the tool failed or ssh never connected.
   */
  requestUpgrade(node: string, timeoutMs: number, options?: { downloadOnly?: boolean }): Promise<void>;
  /**
   * Make a running node apply the deployment a download-only upgrade staged (its driver's apply, which unlocks it
   * and reboots); its cursor moves to the end of its log first. Resolves once the tool handed over to the reboot;
   * rejects with a StepFailure when the tool refused (nothing staged, another digest) or ssh never connected.
   */
  requestFinalize(node: string, timeoutMs: number): Promise<void>;
}
