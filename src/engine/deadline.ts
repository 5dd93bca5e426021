import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import { formatDuration } from '../steps/units.js';

/** Deadlines of the set-up phases and of the actions steps take (the scenario's steps carry their own). */
export const PHASE_DEADLINES = {
  registry: 30_000,
  fixture: 30 * 60_000,
  oscontainer: 15 * 60_000,
  host: 60_000,
  hostKeys: 2 * 60_000,
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
 * How long a phase that was stopped (deadline, Ctrl-C) may take to notice before it is abandoned: its work is
 * abortable, so it settles within moments; this bound only matters for a call that hangs in the hypervisor.
 */
export const ABANDON_AFTER_MS = 10_000;

/**
 * Run `work` with its own signal, aborted after `ms` or when `parent` aborts; reject with DeadlineError on
 * timeout and with the parent's reason on abort. Stopping waits for `work` to settle first (up to
 * ABANDON_AFTER_MS, then `onAbandon` is told): work that is still creating things when its caller moves on to
 * cleanup would leave them behind. What `work` made before it noticed is its own to record (in the run's World)
 * or to undo.
 */
export function withDeadline<T>(
  what: string,
  ms: number,
  parent: AbortSignal,
  work: (signal: AbortSignal) => Promise<T>,
  onAbandon?: (what: string) => void,
): Promise<T> {
  if (parent.aborted) return Promise.reject(parent.reason);
  const controller = new AbortController();
  return new Promise<T>((resolve, reject) => {
    let stopped: unknown;
    let abandonTimer: NodeJS.Timeout | undefined;
    let done = false;
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(abandonTimer);
      parent.removeEventListener('abort', onAbort);
      settle();
    };
    const stop = (reason: unknown) => {
      if (stopped !== undefined || done) return;
      stopped = reason;
      controller.abort(reason);
      abandonTimer = setTimeout(() => {
        onAbandon?.(what);
        finish(() => reject(reason));
      }, ABANDON_AFTER_MS);
    };
    const onAbort = () => stop(parent.reason);
    const timer = setTimeout(() => stop(new DeadlineError(what, ms)), ms);
    parent.addEventListener('abort', onAbort, { once: true });
    work(controller.signal).then(
      (value) => finish(() => (stopped === undefined ? resolve(value) : reject(stopped))),
      (error: unknown) => finish(() => reject(stopped ?? error)),
    );
  });
}

/** The `onAbandon` of withDeadline that says so on the bus: what was left running may leave something behind. */
export function abandonWarning(bus: EventBus): (what: string) => void {
  return (what) =>
    bus.emit({
      kind: 'log',
      level: 'warn',
      source: 'engine',
      message: `${what} was stopped but did not finish within ${ABANDON_AFTER_MS / 1000} s; not waiting for it (devpivot down removes what it may leave)`,
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
