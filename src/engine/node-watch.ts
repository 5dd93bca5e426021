/**
 * What the engine knows about each node: every event about it in bus order (its log), the cursor `expect` steps
 * search from, its console classifier, its VM and its failures; and the waits of steps on those logs.
 */
import type { EventBus } from '../core/bus.js';
import type { EventOf, Stamped } from '../core/events.js';
import type { NodeDef } from '../scenario/types.js';
import { type NodeLogEvent, StepFailure } from '../steps/runtime.js';
import { formatDuration } from '../steps/units.js';
import type { VmNode } from '../vm/host.js';
import { type ClassifierInput, type ClassifierState, classify, initialState } from './classifier.js';

export class NodeWatch {
  readonly log: NodeLogEvent[] = [];
  /** `expect` steps search from here; actions on the node move it to the end. */
  cursor = 0;
  classifier: ClassifierState = initialState;
  vm: VmNode | undefined;
  /** `pending` until an `expect: failure` step takes it (`expected`) or fail-fast reports it (`fatal`). */
  readonly failures: { event: Stamped<EventOf<'guest.failure'>>; state: 'pending' | 'expected' | 'fatal' }[] = [];
  constructor(readonly def: NodeDef) {}

  /** True once its VM started (a node defined and dead at start never did: `--keep` does not keep it). */
  started(): boolean {
    return this.log.some((event) => event.kind === 'vm.started');
  }

  boots(): Stamped<EventOf<'guest.booted'>>[] {
    return this.log.filter((event): event is Stamped<EventOf<'guest.booted'>> => event.kind === 'guest.booted');
  }
}

/** The watches of a run's nodes, fed by `observe` (subscribed to the bus), and the waits on them. */
export class NodeWatches {
  readonly #byName = new Map<string, NodeWatch>();
  readonly #waiters = new Set<() => void>();

  constructor(
    nodes: readonly NodeDef[],
    readonly bus: EventBus,
    /** The run's signal: a wait rejects with its reason when it aborts. */
    readonly signal: AbortSignal,
    /** Commit first booted by a node of each image, filled here for images whose commit was not known. */
    readonly imageCommits: Map<string, string>,
  ) {
    for (const def of nodes) this.#byName.set(def.name, new NodeWatch(def));
  }

  get(name: string): NodeWatch {
    const watch = this.#byName.get(name);
    if (!watch) throw new Error(`no node '${name}' in this run`);
    return watch;
  }

  all(): NodeWatch[] {
    return [...this.#byName.values()];
  }

  names(): string[] {
    return [...this.#byName.keys()];
  }

  /** Every bus event: vm.* of our nodes go through the classifier; both land in the node's log. */
  observe(event: Stamped): void {
    if (!('node' in event) || typeof event.node !== 'string') return;
    const watch = this.#byName.get(event.node);
    if (!watch) return;
    switch (event.kind) {
      case 'vm.console':
      case 'vm.started':
      case 'vm.reboot':
      case 'vm.stopped':
      case 'vm.crashed': {
        // One vm.reboot per guest reboot: the VM host guarantees it (src/vm/host.ts); the engine does not de-duplicate.
        watch.log.push(event);
        const out = classify(watch.classifier, event as ClassifierInput);
        watch.classifier = out.state;
        for (const guest of out.events) this.bus.emit(guest);
        break;
      }
      case 'guest.booted':
      case 'guest.ignition':
      case 'guest.pivot':
      case 'guest.pivot.skipped':
      case 'guest.health':
      case 'guest.fallback':
      case 'guest.failure':
        watch.log.push(event);
        if (event.kind === 'guest.failure') watch.failures.push({ event, state: 'pending' });
        if (event.kind === 'guest.booted' && !this.imageCommits.has(watch.def.image))
          this.imageCommits.set(watch.def.image, event.commit);
        break;
      default:
        return;
    }
    for (const wake of [...this.#waiters]) wake();
  }

  /**
   * Nodes whose failure a later step of the scenario expects, and the nodes the running step is about (both set by
   * the engine before each step): a pending failure of a deferred node waits for the step that expects it instead
   * of failing the running one, unless the running step waits for something of that node that is not in its log.
   */
  deferred: ReadonlySet<string> = new Set();
  about: ReadonlySet<string> = new Set();

  /**
   * Fail fast: a failure marker on any node fails the running step at once, unless this step expects exactly
   * that node to fail (it consumes the failure) or a later step does (`deferred`; but a wait of this step on that
   * very node, `waiting`, fails: what it waits for will not come).
   */
  checkFailures(expectingFailureOn?: string, waiting = false): void {
    for (const watch of this.#byName.values()) {
      const name = watch.def.name;
      if (name === expectingFailureOn || (this.deferred.has(name) && !(waiting && this.about.has(name)))) continue;
      const failure = watch.failures.find((entry) => entry.state === 'pending');
      if (failure) {
        failure.state = 'fatal';
        throw new StepFailure(`node ${watch.def.name} failed: ${failure.event.reason}`);
      }
    }
  }

  /**
   * The first event on `node` from its cursor that matches, within `ms`; moves the cursor past it. With
   * `timeoutOk`, running out of time resolves undefined (a `wait`), otherwise it fails the step.
   */
  waitFor(
    node: string | undefined,
    match: (event: NodeLogEvent) => boolean,
    ms: number,
    what: string,
    options: { expectFailureOn?: string; timeoutOk?: boolean } = {},
  ): Promise<NodeLogEvent | undefined> {
    const watch = node === undefined ? undefined : this.get(node);
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        this.signal.removeEventListener('abort', onAbort);
        settle();
      };
      const check = () => {
        try {
          if (watch) {
            for (let i = watch.cursor; i < watch.log.length; i++) {
              const event = watch.log[i]!;
              if (!match(event)) continue;
              watch.cursor = i + 1;
              if (event.kind === 'guest.failure') {
                const entry = watch.failures.find((failure) => failure.event === event);
                if (entry) entry.state = 'expected';
              }
              finish(() => resolve(event));
              return;
            }
          }
          this.checkFailures(options.expectFailureOn, true);
        } catch (error) {
          finish(() => reject(error));
        }
      };
      const onAbort = () => finish(() => reject(this.signal.reason));
      if (this.signal.aborted) return reject(this.signal.reason);
      this.signal.addEventListener('abort', onAbort, { once: true });
      timer = setTimeout(
        () =>
          finish(() =>
            options.timeoutOk
              ? resolve(undefined)
              : reject(new StepFailure(`${what}: not seen within ${formatDuration(ms)}${failedMeanwhile(watch)}`)),
          ),
        ms,
      );
      this.#waiters.add(check);
      check();
    });
  }
}

/** `; node1 failed: REASON` for a node whose failure waits for a later step: why what the step waited for never came. */
function failedMeanwhile(watch: NodeWatch | undefined): string {
  const pending = watch?.failures.find((entry) => entry.state === 'pending');
  return pending ? `; ${watch!.def.name} failed: ${pending.event.reason}` : '';
}
