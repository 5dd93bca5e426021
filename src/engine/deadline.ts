import { DevpivotError } from '../core/errors.js';
import { formatDuration } from '../steps/units.js';

/** Deadlines of the set-up phases and of the actions steps take (the scenario's steps carry their own). */
export const PHASE_DEADLINES = {
  registry: 30_000,
  fixture: 30 * 60_000,
  oscontainer: 15 * 60_000,
  host: 60_000,
  image: 30 * 60_000,
  createNode: 3 * 60_000,
  startNode: 2 * 60_000,
  powerOff: 60_000,
  cleanup: 2 * 60_000,
};

/** A phase that did not finish in time. */
export class DeadlineError extends DevpivotError {
  constructor(what: string, ms: number) {
    super('DEADLINE', `${what} did not finish within ${formatDuration(ms)}`, {
      hint: 'look at the console of the node (devpivot console NODE) or raise the deadline in the scenario',
    });
    this.name = 'DeadlineError';
  }
}

/**
 * Run `work` with its own signal, aborted after `ms` or when `parent` aborts; reject with DeadlineError on
 * timeout and with the parent's reason on abort, without waiting for `work` to notice.
 */
export function withDeadline<T>(
  what: string,
  ms: number,
  parent: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (parent.aborted) return Promise.reject(parent.reason);
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      controller.abort(parent.reason);
      finish(() => reject(parent.reason));
    };
    const timer = setTimeout(() => {
      const error = new DeadlineError(what, ms);
      controller.abort(error);
      finish(() => reject(error));
    }, ms);
    let done = false;
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
      settle();
    };
    parent.addEventListener('abort', onAbort, { once: true });
    work(controller.signal).then(
      (value) => finish(() => resolve(value)),
      (error: unknown) => finish(() => reject(error)),
    );
  });
}

/** Resolves after `ms`, rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
