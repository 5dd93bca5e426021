/**
 * The VM operations of a host that are under way (node creations, base image uploads), so that removing the
 * session or closing the connection first stops them and waits for them: a creation that goes on after cleanup
 * would leave a domain or volumes nobody removes. Stopping is cooperative: the operations check `signal`.
 */
import { DevpivotError } from '../../core/errors.js';

export class InFlight {
  readonly #work = new Set<Promise<unknown>>();
  #lifetime = new AbortController();

  /** Aborted when the operations are stopped (then renewed for the ones that come later). */
  get signal(): AbortSignal {
    return this.#lifetime.signal;
  }

  track<T>(work: Promise<T>): Promise<T> {
    this.#work.add(work);
    const done = () => this.#work.delete(work);
    work.then(done, done);
    return work;
  }

  /** Stop every operation and wait for them to settle (each rolls itself back), at most `ms`. */
  async settle(ms: number, warn: (message: string) => void): Promise<void> {
    if (this.#work.size > 0) {
      this.#lifetime.abort(new DevpivotError('ABORTED', 'the session is being removed'));
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          warn(`${this.#work.size} VM operation(s) still running after ${ms / 1000} s; not waiting longer`);
          resolve();
        }, ms);
      });
      await Promise.race([Promise.allSettled([...this.#work]), limit]);
      clearTimeout(timer);
    }
    if (this.#lifetime.signal.aborted) this.#lifetime = new AbortController();
  }
}

/** `work`, or the signal's reason as soon as it aborts (the work goes on: it is tracked elsewhere). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
