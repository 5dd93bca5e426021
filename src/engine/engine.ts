/**
 * The run loop: `prepare`, then the scenario's steps in order (each through its definition in `src/steps/`), then
 * cleanup, with a step.* event per step and a RunResult at the end.
 */
import type { EventBus } from '../core/bus.js';
import { DevpivotError, ExitCode } from '../core/errors.js';
import type { Scenario } from '../scenario/types.js';
import { expectsFailureOn, nodesOf, runStep, type Step } from '../steps/index.js';
import { formatDuration } from '../steps/units.js';
import { cleanupRun, releaseWorld, removeNodes } from './cleanup.js';
import type { Deps } from './deps.js';
import { NodeWatches } from './node-watch.js';
import { emptyWorld, prepare, type World } from './prepare.js';
import { RefusedBootPause } from './refused-boot.js';
import { EngineRuntime } from './runtime.js';
import { StagedWatchdog } from './staged-watchdog.js';

export { guestHostPort, repositoryName } from './prepare.js';

export interface EngineOptions {
  scenario: Scenario;
  deps: Deps;
  bus: EventBus;
  /** Ctrl-C / SIGTERM: the run stops and cleans up. */
  signal: AbortSignal;
  /** Leave the VMs defined and running at the end; a function is asked at cleanup (the TUI's `k` key). */
  keep?: boolean | (() => boolean);
  /**
   * A second Ctrl-C does not wait for cleanup: the CLI runs these hooks (best effort, briefly) and exits. The
   * engine registers the removal of what the run created; returns the hook's removal.
   */
  onEmergency?: (hook: () => Promise<void>) => () => void;
  /** libvirt URI (--connect). */
  uri?: string;
  sessionId?: string;
  stateDir: string;
  cacheDir: string;
  /** How long a staged pivot may go without a reboot before it is a failure (default STAGED_GRACE_MS). */
  stagedGraceMs?: number;
}

export interface StepResult {
  index: number;
  name: string;
  status: 'passed' | 'failed' | 'skipped';
  ms: number;
  error?: string;
}

export interface NodeResult {
  name: string;
  domain?: string;
  consoleLog?: string;
  boots: { version: string; commit: string }[];
  /** guest.failure reasons; `expected` when an `expect: failure` step consumed it. */
  failures: { reason: string; expected: boolean }[];
}

export interface RunResult {
  ok: boolean;
  /**
   * 0 passed; 1 a step failed (or a bug in devpivot); 2 a set-up error (prepare failed); 130/143 interrupted
   * (the abort reason's exit status: the CLI's SIGINT/SIGTERM).
   */
  exitCode: ExitCode;
  ms: number;
  steps: StepResult[];
  nodes: NodeResult[];
  registryUrl?: string;
  kept: boolean;
}

/** Step names as the engine reports them: `prepare` first, then the scenario's steps. */
export function stepNames(scenario: Scenario): string[] {
  return ['prepare', ...scenario.steps.map((step) => step.label)];
}

/** A kept run whose registry and VM host are still up, for its caller to serve (`--keep` in the foreground). */
export interface KeptRun {
  readonly registryUrl: string | undefined;
  readonly uri: string;
  readonly sessionId: string;
  readonly nodes: readonly { name: string; domain: string; consoleLog: string }[];
  /** End it: remove the VMs when `remove`, then close the VM host and stop the registry. Never throws. */
  release(options: { remove: boolean }): Promise<void>;
}

/**
 * Run a scenario to the end: prepare (registry, fixture, oscontainers, Ignition, VM host), the steps in order,
 * then clean up (always: on success, failure, deadline, Ctrl-C), unless `keep` (the VMs stay; the registry
 * stops). Never throws for scenario failures: the result (and the events) say what happened.
 */
export async function runScenario(options: EngineOptions): Promise<RunResult> {
  const { result, kept } = await new Engine(options).run(false);
  await kept?.release({ remove: false });
  return result;
}

/** As runScenario, but a kept run also keeps its registry and VM host: the caller serves it, then releases it. */
export async function runScenarioServing(options: EngineOptions): Promise<{ result: RunResult; kept?: KeptRun }> {
  return new Engine(options).run(true);
}

class Engine {
  readonly scenario: Scenario;
  readonly bus: EventBus;
  readonly world: World = emptyWorld();
  readonly watches: NodeWatches;
  readonly runtime: EngineRuntime;
  readonly staged: StagedWatchdog;
  /** The run's signal: the caller's, or the scenario's timeout. */
  readonly signal: AbortSignal;
  readonly runTimer: NodeJS.Timeout;
  readonly detach: () => void;
  /** Fail the run now (the ssh tunnel to a remote host ended): aborts the run's signal with the error. */
  readonly fail: (error: Error) => void;
  setupExitCode: ExitCode | undefined;

  constructor(readonly options: EngineOptions) {
    this.scenario = options.scenario;
    this.bus = options.bus;
    // Own controller rather than AbortSignal.any + AbortSignal.timeout: Node 20 may collect those while pending.
    const controller = new AbortController();
    this.signal = controller.signal;
    this.fail = (error) => controller.abort(error);
    const onAbort = () => controller.abort(options.signal.reason);
    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener('abort', onAbort, { once: true });
    this.runTimer = setTimeout(
      () => controller.abort(new DevpivotError('SCENARIO_TIMEOUT', 'timeout')),
      options.scenario.timeoutMs,
    );
    this.runTimer.unref();
    this.detach = () => {
      clearTimeout(this.runTimer);
      options.signal.removeEventListener('abort', onAbort);
    };
    this.watches = new NodeWatches(this.scenario.nodes, this.bus, this.signal, this.world.imageCommits);
    this.staged = new StagedWatchdog(
      this.bus,
      new Map(this.scenario.nodes.map((def) => [def.name, def.driver])),
      options.stagedGraceMs,
    );
    this.runtime = new EngineRuntime(this.world, this.watches, this.signal, options.signal, this.staged, options.deps);
  }

  async run(hold: boolean): Promise<{ result: RunResult; kept?: KeptRun }> {
    const started = Date.now();
    const dispose = this.bus.subscribe((event) => this.watches.observe(event));
    const disposeStaged = this.bus.subscribe((event) => this.staged.observe(event));
    const refused = new RefusedBootPause(this.bus, this.watches);
    const disposeRefused = this.bus.subscribe((event) => refused.observe(event));
    // A second Ctrl-C: remove what exists right now, without waiting for the cleanup in progress.
    const offEmergency = this.options.onEmergency?.(async () => {
      if (!this.keep()) await this.world.host?.destroyAll();
    });
    const steps: StepResult[] = stepNames(this.scenario).map((name, index) => ({
      index,
      name,
      status: 'skipped',
      ms: 0,
    }));
    let exitCode: ExitCode = ExitCode.ok;
    this.bus.emit({ kind: 'run.start', scenario: this.scenario.name, nodes: this.watches.names() });
    let kept = false;
    try {
      const prepared = await this.step(steps[0]!, () =>
        prepare({ ...this.options, signal: this.signal, onFatal: this.fail }, this.world),
      );
      if (!prepared) exitCode = this.interruption() ?? this.setupExitCode ?? ExitCode.usage;
      for (let i = 0; prepared && i < this.scenario.steps.length; i++) {
        const step = this.scenario.steps[i]!;
        const later = this.scenario.steps.slice(i + 1);
        if (!(await this.step(steps[i + 1]!, () => this.execute(step, later)))) {
          exitCode = this.interruption() ?? ExitCode.failure;
          break;
        }
      }
    } finally {
      dispose();
      disposeStaged();
      disposeRefused();
      this.staged.dispose();
      this.detach();
      kept = this.keep() && this.world.host !== undefined;
      await cleanupRun(this.world, this.watches, { keep: this.keep(), hold: hold && kept }, this.bus);
      offEmergency?.();
    }
    const ms = Date.now() - started;
    const ok = exitCode === ExitCode.ok;
    this.bus.emit({ kind: 'run.end', ok, ms });
    const result = this.result(exitCode, ms, steps, kept);
    return kept && hold ? { result, kept: this.keptRun() } : { result };
  }

  keptRun(): KeptRun {
    const { world, watches, bus } = this;
    const host = world.host!;
    return {
      registryUrl: world.registryUrl,
      uri: host.uri,
      sessionId: host.sessionId,
      nodes: watches
        .all()
        .flatMap((watch) =>
          watch.vm ? [{ name: watch.def.name, domain: watch.vm.domain, consoleLog: watch.vm.consoleLog }] : [],
        ),
      async release({ remove }) {
        if (remove) await removeNodes(world, watches, bus);
        await releaseWorld(world, bus);
      },
    };
  }

  /** The exit status of an interrupted run (the caller's signal aborted), else undefined. */
  interruption(): ExitCode | undefined {
    const signal = this.options.signal;
    if (!signal.aborted) return undefined;
    const reason = signal.reason;
    return reason instanceof DevpivotError && reason.exitCode >= ExitCode.interrupted
      ? reason.exitCode
      : ExitCode.interrupted;
  }

  result(exitCode: ExitCode, ms: number, steps: StepResult[], kept: boolean): RunResult {
    const ok = exitCode === ExitCode.ok;
    return {
      ok,
      exitCode,
      ms,
      steps,
      nodes: this.watches.all().map((watch) => ({
        name: watch.def.name,
        ...(watch.vm ? { domain: watch.vm.domain, consoleLog: watch.vm.consoleLog } : {}),
        boots: watch.boots().map(({ version, commit }) => ({ version, commit })),
        failures: watch.failures.map((failure) => ({
          reason: failure.event.reason,
          expected: failure.state === 'expected',
        })),
      })),
      ...(this.world.registryUrl ? { registryUrl: this.world.registryUrl } : {}),
      kept,
    };
  }

  keep(): boolean {
    const keep = this.options.keep;
    return typeof keep === 'function' ? keep() : Boolean(keep);
  }

  /**
   * A scenario step: fail fast on a failure that came before it, then its definition's run. A failure of a node
   * that a `later` step expects to fail waits for that step, unless this step waits on that node for something
   * its log does not have.
   */
  async execute(step: Step, later: readonly Step[]): Promise<void> {
    const about = new Set(nodesOf(step));
    if ('node' in step && typeof step.node === 'string') about.add(step.node);
    this.watches.about = about;
    this.watches.deferred = new Set(later.flatMap((next) => expectsFailureOn(next) ?? []));
    this.watches.checkFailures(expectsFailureOn(step));
    await runStep(step, this.runtime);
  }

  /** One step with its events; false when it failed (the error is in the step.fail event). */
  async step(result: StepResult, body: () => Promise<void>): Promise<boolean> {
    const t0 = Date.now();
    this.bus.emit({ kind: 'step.start', index: result.index, name: result.name });
    try {
      if (this.signal.aborted) throw this.signal.reason;
      await body();
      result.status = 'passed';
      result.ms = Date.now() - t0;
      this.bus.emit({ kind: 'step.pass', index: result.index, name: result.name, ms: result.ms });
      return true;
    } catch (error) {
      result.status = 'failed';
      result.ms = Date.now() - t0;
      result.error = this.describe(error);
      // A set-up error is exit status 2, whatever its own; an error that is not a DevpivotError is a bug (1).
      if (result.index === 0) this.setupExitCode = error instanceof DevpivotError ? ExitCode.usage : ExitCode.failure;
      this.bus.emit({ kind: 'step.fail', index: result.index, name: result.name, ms: result.ms, error: result.error });
      return false;
    }
  }

  describe(error: unknown): string {
    if (error === this.options.signal.reason && this.options.signal.aborted) return `interrupted (${messageOf(error)})`;
    const timedOut = error instanceof DevpivotError && error.code === 'SCENARIO_TIMEOUT';
    if (this.signal.aborted && error === this.signal.reason && !this.options.signal.aborted && timedOut)
      return `the scenario's timeout of ${formatDuration(this.scenario.timeoutMs)} ran out`;
    if (error instanceof DevpivotError && error.hint) return `${error.message} (hint: ${error.hint})`;
    return messageOf(error);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
