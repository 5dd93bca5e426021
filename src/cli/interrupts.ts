/**
 * SIGINT and SIGTERM, as every verb sees them. The first one aborts the command's signal with an ABORTED error
 * carrying the exit status (130 for SIGINT, 143 for SIGTERM): the command stops and cleans up, and the process
 * exits with that status. A second one does not wait for that cleanup: it runs the emergency hooks (a
 * best-effort destroy of what the run created) for at most EMERGENCY_BUDGET_MS and exits at once.
 * While a kept environment is served (`--keep`), a signal ends the serving instead: the run itself is over.
 * A closed stdout or stderr (`devpivot run --json | head`, a test runner killed while its child runs) counts as a
 * first signal, 'SIGPIPE' (exit 141, as a shell reports a process killed by it): Node ignores the signal itself and
 * fails the write with EPIPE, which unhandled would end the process before the cleanup, VMs left running.
 */
import { DevpivotError, ExitCode } from '../core/errors.js';
import { exitProcess } from '../core/exit.js';

/** How long the second signal's best-effort destroy may take before the process exits regardless. */
export const EMERGENCY_BUDGET_MS = 1000;

export type Interrupt = 'SIGINT' | 'SIGTERM' | 'SIGPIPE';

export function interruptExitCode(signal: Interrupt): ExitCode {
  return signal === 'SIGINT'
    ? ExitCode.interrupted
    : signal === 'SIGPIPE'
      ? ExitCode.outputClosed
      : ExitCode.terminated;
}

/** The abort reason of the first signal. */
export function interruptedBy(signal: Interrupt): DevpivotError {
  const what = signal === 'SIGPIPE' ? 'its output was closed (EPIPE)' : `interrupted by ${signal}`;
  return new DevpivotError('ABORTED', what, { exitCode: interruptExitCode(signal) });
}

export interface Interrupts {
  /** Aborted on the first signal, with `interruptedBy(signal)` as its reason. */
  readonly signal: AbortSignal;
  /** A best-effort hook for a second signal (destroy what was created); returns its removal. */
  onEmergency(hook: () => Promise<void>): () => void;
  /** Until a signal arrives (or `stop` is called): the signal that ends it is not an interruption of the run. */
  serve(): { stopped: Promise<Interrupt | 'stopped'>; stop(): void };
  /** The reader of stdout or stderr went away: a first 'SIGPIPE' (later ones are ignored: nothing can be said). */
  outputClosed(): void;
}

export interface InterruptHost {
  on(signal: Interrupt, listener: () => void): unknown;
  exit(code: number): never | void;
}

export function installInterrupts(
  host: InterruptHost = { on: (signal, listener) => process.on(signal, listener), exit: exitProcess },
): Interrupts {
  const controller = new AbortController();
  const hooks = new Set<() => Promise<void>>();
  let serving: ((signal: Interrupt | 'stopped') => void) | undefined;
  let emergency = false;
  // After a signal ended the serving of a kept environment, the next one is a second signal: its cleanup runs.
  let served = false;
  const onSignal = (signal: Interrupt) => {
    if (serving) {
      const stop = serving;
      serving = undefined;
      served = true;
      stop(signal);
      return;
    }
    if (!controller.signal.aborted && !served) {
      controller.abort(interruptedBy(signal));
      return;
    }
    if (emergency) return;
    emergency = true;
    const budget = new Promise<void>((resolve) => setTimeout(resolve, EMERGENCY_BUDGET_MS).unref());
    const work = Promise.allSettled([...hooks].map((hook) => hook()));
    void Promise.race([work, budget]).then(() => host.exit(interruptExitCode(signal)));
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) host.on(signal, () => onSignal(signal));
  let closed = false;
  return {
    signal: controller.signal,
    outputClosed() {
      if (closed) return;
      closed = true;
      onSignal('SIGPIPE');
    },
    onEmergency(hook) {
      hooks.add(hook);
      return () => hooks.delete(hook);
    },
    serve() {
      let stop!: () => void;
      const stopped = new Promise<Interrupt | 'stopped'>((resolve) => {
        serving = resolve;
        stop = () => {
          if (serving === resolve) serving = undefined;
          resolve('stopped');
        };
      });
      return { stopped, stop };
    },
  };
}

/**
 * For verbs whose normal end is a signal (`registry serve`, `logs -f`): resolves on the first SIGINT/SIGTERM,
 * which then is the verb's end (exit status 0), not an interruption.
 */
export function untilStopped(context: { signal: AbortSignal; interrupts?: Interrupts }): Promise<void> {
  if (context.signal.aborted) return Promise.resolve();
  if (context.interrupts) return context.interrupts.serve().stopped.then(() => {});
  return new Promise((resolve) => context.signal.addEventListener('abort', () => resolve(), { once: true }));
}
