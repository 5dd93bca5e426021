import { join } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { DevpivotError, ExitCode } from '../core/errors.js';
import type { EventOf, Stamped } from '../core/events.js';
import type { NodeDef, OscontainerSource, Scenario } from '../scenario/types.js';
import { formatDuration } from '../scenario/units.js';
import type { Step } from '../steps/index.js';
import type { VmHost, VmNode } from '../vm/host.js';
import { type ClassifierInput, type ClassifierState, classify, type GuestEvent, initialState } from './classifier.js';
import { withDeadline } from './deadline.js';
import type { Deps, FixtureArtifacts, PushedImage, RegistryHandle } from './deps.js';
import { fixtureVersion, resolveImage } from './images.js';

/** Deadlines of the set-up phases (the scenario's steps carry their own). */
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

type NodeLogEvent = Stamped<
  | EventOf<'vm.console'>
  | EventOf<'vm.started'>
  | EventOf<'vm.reboot'>
  | EventOf<'vm.stopped'>
  | EventOf<'vm.crashed'>
  | GuestEvent
>;

/** What the engine knows about one node: every event about it, in order, and the expect cursor. */
class NodeWatch {
  readonly log: NodeLogEvent[] = [];
  /** `expect` steps search from here; actions on the node move it to the end. */
  cursor = 0;
  classifier: ClassifierState = initialState;
  vm: VmNode | undefined;
  /** `pending` until an `expect: failure` step takes it (`expected`) or fail-fast reports it (`fatal`). */
  readonly failures: { event: Stamped<EventOf<'guest.failure'>>; state: 'pending' | 'expected' | 'fatal' }[] = [];
  constructor(readonly def: NodeDef) {}

  boots(): Stamped<EventOf<'guest.booted'>>[] {
    return this.log.filter((event): event is Stamped<EventOf<'guest.booted'>> => event.kind === 'guest.booted');
  }
}

class StepFailure extends Error {}

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
  readonly deps: Deps;
  readonly bus: EventBus;
  readonly nodes = new Map<string, NodeWatch>();
  readonly images = new Map<string, PushedImage>();
  readonly diskOf = new Map<string, string>();
  readonly ignitionOf = new Map<string, string>();
  /** Commit first booted by a node of each non-fixture image (what `booted: <image>` means for it). */
  readonly imageCommits = new Map<string, string>();
  registry: RegistryHandle | undefined;
  registryUrl: string | undefined;
  host: VmHost | undefined;
  fixture: Promise<FixtureArtifacts> | undefined;
  readonly waiters = new Set<() => void>();
  readonly signal: AbortSignal;
  readonly runTimer: NodeJS.Timeout;
  readonly detach: () => void;

  constructor(readonly options: EngineOptions) {
    this.scenario = options.scenario;
    this.deps = options.deps;
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
    for (const def of this.scenario.nodes) this.nodes.set(def.name, new NodeWatch(def));
  }

  async run(): Promise<RunResult> {
    const started = Date.now();
    const dispose = this.bus.subscribe((event) => this.observe(event));
    const steps: StepResult[] = stepNames(this.scenario).map((name, index) => ({
      index,
      name,
      status: 'skipped',
      ms: 0,
    }));
    let exitCode: ExitCode = ExitCode.ok;
    this.bus.emit({ kind: 'run.start', scenario: this.scenario.name, nodes: [...this.nodes.keys()] });
    try {
      const prepared = await this.step(steps[0]!, () => this.prepare());
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
      this.detach();
      await this.cleanup();
    }
    const ms = Date.now() - started;
    const ok = exitCode === ExitCode.ok;
    this.bus.emit({ kind: 'run.end', ok, ms });
    return {
      ok,
      exitCode,
      ms,
      steps,
      nodes: [...this.nodes.values()].map((watch) => ({
        name: watch.def.name,
        ...(watch.vm ? { domain: watch.vm.domain, consoleLog: watch.vm.consoleLog } : {}),
        boots: watch.boots().map(({ version, commit }) => ({ version, commit })),
        failures: watch.failures.map((failure) => ({
          reason: failure.event.reason,
          expected: failure.state === 'expected',
        })),
      })),
      ...(this.registryUrl ? { registryUrl: this.registryUrl } : {}),
      kept: this.keep() && this.host !== undefined,
    };
  }

  setupExitCode: ExitCode | undefined;

  keep(): boolean {
    const keep = this.options.keep;
    return typeof keep === 'function' ? keep() : Boolean(keep);
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

  // ---- events -------------------------------------------------------------------------------------------------

  /** Every bus event: vm.* of our nodes go through the classifier; both land in the node's log. */
  observe(event: Stamped): void {
    if (!('node' in event) || typeof event.node !== 'string') return;
    const watch = this.nodes.get(event.node);
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
      case 'guest.failure':
        watch.log.push(event);
        if (event.kind === 'guest.failure') watch.failures.push({ event, state: 'pending' });
        if (event.kind === 'guest.booted' && !this.imageCommits.has(watch.def.image))
          this.imageCommits.set(watch.def.image, event.commit);
        break;
      default:
        return;
    }
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * Fail fast: a failure marker on any node fails the running step at once, unless this step expects exactly
   * that node to fail (it consumes the failure).
   */
  checkFailures(expectingFailureOn?: string): void {
    for (const watch of this.nodes.values()) {
      if (watch.def.name === expectingFailureOn) continue;
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
    const watch = node === undefined ? undefined : this.nodes.get(node)!;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
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
          this.checkFailures(options.expectFailureOn);
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
              : reject(new StepFailure(`${what}: not seen within ${formatDuration(ms)}`)),
          ),
        ms,
      );
      this.waiters.add(check);
      check();
    });
  }

  // ---- prepare ------------------------------------------------------------------------------------------------

  loadFixture(): Promise<FixtureArtifacts> {
    this.fixture ??= withDeadline('preparing the fixture OS images', PHASE_DEADLINES.fixture, this.signal, (signal) =>
      this.deps.loadFixture({ bus: this.bus, signal }),
    );
    return this.fixture;
  }

  async prepare(): Promise<void> {
    const spec = this.scenario.registry;
    if (spec.kind === 'embedded') {
      this.registry = await withDeadline('starting the registry', PHASE_DEADLINES.registry, this.signal, () =>
        this.deps.startRegistry({
          host: '127.0.0.1',
          port: 0,
          storage: join(this.options.stateDir, 'registry'),
          bus: this.bus,
        }),
      );
      this.registryUrl = this.registry.url;
    } else {
      this.registryUrl = spec.url;
    }
    for (const [name, source] of this.scenario.oscontainers) {
      this.images.set(name, await this.oscontainer(name, source));
    }
    for (const def of this.scenario.nodes) {
      if (this.diskOf.has(def.image)) continue;
      const source = this.scenario.images.get(def.image)!;
      const disk = await withDeadline(`preparing image '${def.image}'`, PHASE_DEADLINES.image, this.signal, (signal) =>
        resolveImage(def.image, source, { fixture: () => this.loadFixture(), cacheDir: this.options.cacheDir, signal }),
      );
      this.diskOf.set(def.image, disk);
    }
    // The fixture's commits are what `booted: fixture:N` means for images.
    for (const [name, source] of this.scenario.images) {
      if (source.kind === 'fixture')
        this.imageCommits.set(name, fixtureVersion(await this.loadFixture(), source.version).commit);
    }
    const guestRegistry = guestHostPort(this.registryUrl);
    for (const def of this.scenario.nodes) {
      const target = def.pivot ? this.images.get(def.pivot)! : undefined;
      const repository = def.pivot ? repositoryName(def.pivot) : undefined;
      const config = this.deps.generateIgnition({
        driver: def.driver,
        ...(target ? { image: `${guestRegistry}/${repository}@${target.digest}` } : {}),
        registry: { hostPort: guestRegistry, insecure: this.registryUrl.startsWith('http:') },
        ...(def.kernelArgs.add.length + def.kernelArgs.delete.length > 0 ? { kernelArgs: def.kernelArgs } : {}),
        ...(def.ignition ? { extra: def.ignition } : {}),
      });
      this.ignitionOf.set(def.name, JSON.stringify(config));
    }
    this.host = await withDeadline('connecting to libvirt', PHASE_DEADLINES.host, this.signal, () =>
      this.deps.openHost({
        ...(this.options.uri ? { uri: this.options.uri } : {}),
        ...(this.options.sessionId ? { sessionId: this.options.sessionId } : {}),
        bus: this.bus,
      }),
    );
  }

  async oscontainer(name: string, source: OscontainerSource): Promise<PushedImage> {
    const registry = this.registryUrl!;
    const repository = repositoryName(name);
    return withDeadline(`preparing oscontainer '${name}'`, PHASE_DEADLINES.oscontainer, this.signal, async (signal) => {
      switch (source.kind) {
        case 'build-fixture': {
          const fixture = await this.loadFixture();
          const commit = fixtureVersion(fixture, source.version).commit;
          return this.deps.buildOscontainer({
            source: { repo: fixture.repo, commit },
            registry,
            repository,
            bus: this.bus,
            signal,
          });
        }
        case 'build-ostree':
          return this.deps.buildOscontainer({
            source: { repo: source.repo, commit: source.commit },
            registry,
            repository,
            bus: this.bus,
            signal,
          });
        case 'build-rootfs':
          return this.deps.buildOscontainer({
            source: { rootfs: source.rootfs, ...(source.version ? { version: source.version } : {}) },
            registry,
            repository,
            bus: this.bus,
            signal,
          });
        case 'pull':
          return this.deps.pullOscontainer({ ref: source.ref, registry, repository, bus: this.bus, signal });
      }
    });
  }

  // ---- steps --------------------------------------------------------------------------------------------------

  async execute(step: Step): Promise<void> {
    this.checkFailures(step.kind === 'expect' && step.event === 'failure' ? step.node : undefined);
    switch (step.kind) {
      case 'up':
        for (const name of step.nodes) await this.up(name);
        return;
      case 'expect':
        await this.expect(step);
        return;
      case 'assert':
        this.assert(step);
        return;
      case 'fault':
        await this.fault(step);
        return;
      case 'wait':
        await this.waitFor(undefined, () => false, step.ms, 'wait', { timeoutOk: true });
        return;
      case 'power-off': {
        const watch = this.nodes.get(step.node)!;
        if (step.when) {
          const phase = step.when;
          await this.waitFor(
            step.node,
            (event) => event.kind === 'guest.pivot' && event.phase === phase,
            step.withinMs,
            `${step.node} pivot phase ${phase}`,
          );
        }
        if (step.afterMs > 0) await this.waitFor(undefined, () => false, step.afterMs, 'wait', { timeoutOk: true });
        await this.powerCycle(watch, step.restart);
        return;
      }
      case 'reboot':
      case 'pivot':
        // A hard reset: the guest's pivot agent runs again at boot while its pullspec is still there.
        await this.powerCycle(this.nodes.get(step.node)!, true);
        return;
      case 'down':
        await this.down();
        return;
    }
  }

  async up(name: string): Promise<void> {
    const watch = this.nodes.get(name)!;
    if (watch.vm) throw new StepFailure(`node ${name} is already up`);
    const def = watch.def;
    const host = this.host!;
    watch.vm = await withDeadline(`defining node ${name}`, PHASE_DEADLINES.createNode, this.signal, (signal) =>
      host.createNode(
        {
          name,
          image: this.diskOf.get(def.image)!,
          ignition: this.ignitionOf.get(name)!,
          memoryMiB: def.memoryMiB,
          vcpus: def.vcpus,
          firmware: def.firmware,
        },
        signal,
      ),
    );
    watch.cursor = watch.log.length;
    await withDeadline(`starting node ${name}`, PHASE_DEADLINES.startNode, this.signal, () => watch.vm!.start());
  }

  async powerCycle(watch: NodeWatch, restart: boolean): Promise<void> {
    const vm = watch.vm;
    if (!vm) throw new StepFailure(`node ${watch.def.name} is not up`);
    await withDeadline(`powering off ${watch.def.name}`, PHASE_DEADLINES.powerOff, this.signal, () => vm.powerOff());
    watch.cursor = watch.log.length;
    if (restart)
      await withDeadline(`starting node ${watch.def.name}`, PHASE_DEADLINES.startNode, this.signal, () => vm.start());
  }

  async expect(step: Extract<Step, { kind: 'expect' }>): Promise<void> {
    const commit = step.booted === undefined ? undefined : this.commitOf(step.booted);
    const pattern = step.match === undefined ? undefined : new RegExp(step.match);
    const match = (event: NodeLogEvent): boolean => {
      switch (step.event) {
        case 'ignition':
          return event.kind === 'guest.ignition' && event.ok;
        case 'pivot.pulling':
        case 'pivot.staging':
        case 'pivot.staged':
        case 'pivot.rebooting':
          return event.kind === 'guest.pivot' && `pivot.${event.phase}` === step.event;
        case 'pivot.skipped':
          return event.kind === 'guest.pivot.skipped';
        case 'reboot':
          return event.kind === 'vm.reboot';
        case 'stopped':
          return event.kind === 'vm.stopped';
        case 'booted':
          // An image's commit may only be known once a node of it booted: look it up per event.
          return (
            event.kind === 'guest.booted' &&
            (step.booted === undefined || event.commit === (commit ?? this.commitOf(step.booted)))
          );
        case 'failure':
          return event.kind === 'guest.failure' && (!pattern || pattern.test(event.reason));
        case 'console':
          return event.kind === 'vm.console' && new RegExp(step.match!).test(event.line);
      }
    };
    const what = `${step.node} ${step.event}${step.booted ? ` ${step.booted}` : ''}${step.match ? ` /${step.match}/` : ''}`;
    await this.waitFor(step.node, match, step.withinMs, what, {
      ...(step.event === 'failure' ? { expectFailureOn: step.node } : {}),
    });
  }

  /** The ostree commit an oscontainer carries, or that an image boots. */
  commitOf(name: string): string | undefined {
    return this.images.get(name)?.commit ?? this.imageCommits.get(name);
  }

  assert(step: Extract<Step, { kind: 'assert' }>): void {
    const watch = this.nodes.get(step.node)!;
    const boots = watch.boots();
    const problems: string[] = [];
    if (step.booted !== undefined) {
      const want = this.commitOf(step.booted);
      const last = boots.at(-1);
      if (!last) problems.push(`${step.node} has not reported a boot`);
      else if (want === undefined) problems.push(`the commit of '${step.booted}' is unknown (no node of it booted)`);
      else if (last.commit !== want)
        problems.push(
          `${step.node} booted version ${last.version} (${last.commit.slice(0, 12)}), expected ${step.booted} (${want.slice(0, 12)})`,
        );
    }
    if (step.reboots !== undefined && Math.max(0, boots.length - 1) !== step.reboots)
      problems.push(`${step.node} rebooted ${Math.max(0, boots.length - 1)} time(s), expected ${step.reboots}`);
    if (step.failed !== undefined && watch.failures.length > 0 !== step.failed)
      problems.push(
        step.failed
          ? `${step.node} reported no failure`
          : `${step.node} reported a failure: ${watch.failures[0]!.event.reason}`,
      );
    if (problems.length > 0) throw new StepFailure(problems.join('; '));
  }

  async fault(step: Extract<Step, { kind: 'fault' }>): Promise<void> {
    const registry = this.registry;
    if (!registry)
      throw new DevpivotError('FAULT_EXTERNAL_REGISTRY', 'registry faults need the embedded registry', {
        hint: "remove 'registry:' from the scenario to use the embedded one",
      });
    switch (step.registry) {
      case 'down':
        await withDeadline('stopping the registry', PHASE_DEADLINES.registry, this.signal, () => registry.stop());
        return;
      case 'up':
        await withDeadline('restarting the registry', PHASE_DEADLINES.registry, this.signal, () => registry.start());
        return;
      case 'corrupt-blob':
        registry.faults.corruptBlobs = true;
        return;
      case 'slow':
        registry.faults.slowBytesPerSecond = step.bytesPerSecond!;
        return;
      case 'clear':
        delete registry.faults.corruptBlobs;
        delete registry.faults.slowBytesPerSecond;
        return;
    }
  }

  async down(): Promise<void> {
    const host = this.host;
    if (!host) return;
    for (const watch of this.nodes.values()) {
      const vm = watch.vm;
      if (vm)
        await withDeadline(`removing node ${watch.def.name}`, PHASE_DEADLINES.cleanup, this.options.signal, () =>
          vm.destroy(),
        );
      watch.vm = undefined;
    }
    await withDeadline('removing the VMs', PHASE_DEADLINES.cleanup, this.options.signal, () => host.destroyAll());
  }

  // ---- cleanup ------------------------------------------------------------------------------------------------

  /** Always runs, even after Ctrl-C: its own deadline, not the run's signal. */
  async cleanup(): Promise<void> {
    const never = new AbortController().signal;
    const quiet = async (what: string, work: () => Promise<void>) => {
      try {
        await withDeadline(what, PHASE_DEADLINES.cleanup, never, work);
      } catch (error) {
        this.bus.emit({ kind: 'log', level: 'warn', source: 'engine', message: `${what}: ${messageOf(error)}` });
      }
    };
    const host = this.host;
    if (host) {
      if (!this.keep()) {
        // Each node we created by its own handle first, then whatever else the session holds.
        for (const watch of this.nodes.values()) {
          const vm = watch.vm;
          if (vm) await quiet(`removing node ${watch.def.name}`, () => vm.destroy());
        }
        await quiet('removing the VMs', () => host.destroyAll());
      }
      await quiet('closing the libvirt connection', () => host.close());
    }
    const registry = this.registry;
    if (registry) await quiet('stopping the registry', () => registry.stop());
  }
}

/** Repository for an oscontainer in our registry: `fixture:2` -> devpivot/fixture-2. */
export function repositoryName(name: string): string {
  return `devpivot/${name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}`;
}

/** host:port of a registry as the guest reaches it: the host's loopback is 10.0.2.2 under user networking. */
export function guestHostPort(url: string): string {
  const parsed = new URL(url);
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  const host = ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname) ? '10.0.2.2' : parsed.hostname;
  return `${host}:${port}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
