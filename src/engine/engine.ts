/**
 * The run loop: `prepare`, then the scenario's steps in order (each through its definition in `src/steps/`), then
 * cleanup, with a step.* event per step and a RunResult at the end.
 */
import type { EventBus } from '../core/bus.js';
import { DevpivotError, ExitCode } from '../core/errors.js';
import type { Scenario } from '../scenario/types.js';
import { expectsFailureOn, runStep, type Step } from '../steps/index.js';
import { formatDuration } from '../steps/units.js';
import { cleanupRun } from './cleanup.js';
import type { Deps } from './deps.js';
import { NodeWatches } from './node-watch.js';
import { emptyWorld, prepare, type World } from './prepare.js';
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
  /** 0 passed, 1 scenario failed, 2 set-up error (prepare failed or bad input). */
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

/**
 * Run a scenario to the end: prepare (registry, fixture, oscontainers, Ignition, VM host), the steps in order,
 * then clean up (always: on success, failure, deadline, Ctrl-C), unless `keep`. Never throws for scenario
 * failures: the result (and the events) say what happened.
 */
export async function runScenario(options: EngineOptions): Promise<RunResult> {
  return new Engine(options).run();
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
  setupExitCode: ExitCode | undefined;

  constructor(readonly options: EngineOptions) {
    this.scenario = options.scenario;
    this.bus = options.bus;
    // Own controller rather than AbortSignal.any + AbortSignal.timeout: Node 20 may collect those while pending.
    const controller = new AbortController();
    this.signal = controller.signal;
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
    this.runtime = new EngineRuntime(this.world, this.watches, this.signal, options.signal, this.staged);
  }

  async run(): Promise<RunResult> {
    const started = Date.now();
    const dispose = this.bus.subscribe((event) => this.watches.observe(event));
    const disposeStaged = this.bus.subscribe((event) => this.staged.observe(event));
    const steps: StepResult[] = stepNames(this.scenario).map((name, index) => ({
      index,
      name,
      status: 'skipped',
      ms: 0,
    }));
    let exitCode: ExitCode = ExitCode.ok;
    this.bus.emit({ kind: 'run.start', scenario: this.scenario.name, nodes: this.watches.names() });
    try {
      const prepared = await this.step(steps[0]!, () => prepare({ ...this.options, signal: this.signal }, this.world));
      if (!prepared) exitCode = this.setupExitCode ?? ExitCode.usage;
      for (let i = 0; prepared && i < this.scenario.steps.length; i++) {
        const step = this.scenario.steps[i]!;
        if (!(await this.step(steps[i + 1]!, () => this.execute(step)))) {
          exitCode = ExitCode.failure;
          break;
        }
      }
    } finally {
      dispose();
      disposeStaged();
      this.staged.dispose();
      this.detach();
      await cleanupRun(this.world, this.watches, () => this.keep(), this.bus);
    }
    const ms = Date.now() - started;
    const ok = exitCode === ExitCode.ok;
    this.bus.emit({ kind: 'run.end', ok, ms });
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
      kept: this.keep() && this.world.host !== undefined,
    };
  }

  keep(): boolean {
    const keep = this.options.keep;
    return typeof keep === 'function' ? keep() : Boolean(keep);
  }

  /** A scenario step: fail fast on a failure that came before it, then its definition's run. */
  async execute(step: Step): Promise<void> {
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
      if (result.index === 0) this.setupExitCode = error instanceof DevpivotError ? error.exitCode : ExitCode.usage;
      this.bus.emit({ kind: 'step.fail', index: result.index, name: result.name, ms: result.ms, error: result.error });
      return false;
    }
  }

  describe(error: unknown): string {
    if (error === this.options.signal.reason && this.options.signal.aborted) return `interrupted (${messageOf(error)})`;
    if (this.signal.aborted && error === this.signal.reason && !this.options.signal.aborted)
      return `the scenario's timeout of ${formatDuration(this.scenario.timeoutMs)} ran out`;
    if (error instanceof DevpivotError && error.hint) return `${error.message} (hint: ${error.hint})`;
    return messageOf(error);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
