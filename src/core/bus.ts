import type { DevpivotEvent, EventKind, EventOf, Stamped } from './events.js';

export type Listener<E> = (event: E) => void;
export type Disposer = () => void;

/**
 * A typed, synchronous event bus. Listeners are called in subscription order; a throwing listener is reported
 * to `onListenerError` and never stops delivery to the others (a broken UI must not break a run).
 */
export class EventBus {
  readonly #all = new Set<Listener<Stamped>>();
  readonly #byKind = new Map<EventKind, Set<Listener<Stamped>>>();
  readonly #onListenerError: (error: unknown) => void;
  readonly #now: () => number;

  constructor(options: { onListenerError?: (error: unknown) => void; now?: () => number } = {}) {
    this.#onListenerError =
      options.onListenerError ??
      ((error) =>
        queueMicrotask(() => {
          throw error;
        }));
    this.#now = options.now ?? Date.now;
  }

  emit(event: DevpivotEvent): void {
    const stamped: Stamped = { ...event, at: this.#now() };
    for (const listener of this.#byKind.get(event.kind) ?? []) this.#deliver(listener, stamped);
    for (const listener of this.#all) this.#deliver(listener, stamped);
  }

  /** Every event. Returns a disposer that unsubscribes. */
  subscribe(listener: Listener<Stamped>): Disposer {
    this.#all.add(listener);
    return () => this.#all.delete(listener);
  }

  /** Events of one kind, typed. Returns a disposer that unsubscribes. */
  on<K extends EventKind>(kind: K, listener: Listener<Stamped<EventOf<K>>>): Disposer {
    let set = this.#byKind.get(kind);
    if (!set) {
      set = new Set();
      this.#byKind.set(kind, set);
    }
    const wrapped = listener as Listener<Stamped>;
    set.add(wrapped);
    return () => set.delete(wrapped);
  }

  /** Resolves with the first event of `kind` that matches, or rejects when `signal` aborts. */
  once<K extends EventKind>(
    kind: K,
    match: (event: Stamped<EventOf<K>>) => boolean = () => true,
    signal?: AbortSignal,
  ): Promise<Stamped<EventOf<K>>> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        dispose();
        reject(signal?.reason);
      };
      const dispose = this.on(kind, (event) => {
        if (!match(event)) return;
        dispose();
        signal?.removeEventListener('abort', onAbort);
        resolve(event);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #deliver(listener: Listener<Stamped>, event: Stamped): void {
    try {
      listener(event);
    } catch (error) {
      this.#onListenerError(error);
    }
  }
}
