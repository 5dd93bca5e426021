import { join } from 'node:path';
import { EventBus } from '../../src/core/bus.js';
import type { Deps, FixtureArtifacts, IgnitionRequest, RegistryHandle } from '../../src/engine/deps.js';
import { type RunResult, runScenario } from '../../src/engine/engine.js';
import { corruptsFor } from '../../src/registry/blob-stream.js';
import { localEnvironment, type ScenarioEnvironment } from '../../src/scenario/environment.js';
import { parseScenario } from '../../src/scenario/parse.js';
import type { NodeSpec, VmHost, VmNode } from '../../src/vm/host.js';
import { tempDir } from '../helpers/temp.js';

/**
 * A fake VM host for the engine's unit tests (engine logic only; the real host is tested in test/vm and e2e).
 * Each node runs a scripted guest that prints what the fixture OS prints, with short delays, and consults the
 * fake registry's state (down, corrupt) the way the real guest's pull would meet it.
 */
export const COMMITS: Record<string, string> = { '1': '1'.repeat(64), '2': '2'.repeat(64) };

export interface FakeOptions {
  /** ms between console lines. */
  tick?: number;
  /** What a boot prints instead of the default program (return true to stop the default program). */
  onBoot?: (node: FakeNode, boot: number) => Promise<boolean> | boolean;
  startRegistryError?: Error;
}

export class FakeRegistry implements RegistryHandle {
  readonly url = 'http://127.0.0.1:45678';
  readonly port = 45678;
  readonly faults: RegistryHandle['faults'] = {};
  up = true;
  stops = 0;
  /** The node ports handed out, in order: 45679, 45680, … */
  readonly nodePorts = new Map<string, number>();
  async addNodePort(node: string) {
    const known = this.nodePorts.get(node);
    if (known !== undefined) return known;
    const port = this.port + 1 + this.nodePorts.size;
    this.nodePorts.set(node, port);
    return port;
  }
  async stop() {
    this.up = false;
    this.stops++;
  }
  async start() {
    this.up = true;
  }
}

export class FakeNode implements VmNode {
  readonly name: string;
  readonly consoleLog: string;
  readonly domain: string;
  boots = 0;
  running = false;
  destroyed = false;
  /** The deployed version on the node's disk, and the pullspec left by Ignition. */
  deployed: string;
  pullspec: string | undefined;
  firstBoot = true;
  #run: AbortController | undefined;

  constructor(
    readonly spec: NodeSpec,
    readonly host: FakeHost,
  ) {
    this.name = spec.name;
    this.domain = `devpivot-test-engine-${spec.name}`;
    this.consoleLog = `/tmp/${this.domain}.log`;
    this.deployed = spec.image.endsWith('v2.qcow2') ? '2' : '1';
  }

  get bus(): EventBus {
    return this.host.bus;
  }

  async start() {
    this.running = true;
    this.bus.emit({ kind: 'vm.started', node: this.spec.name, domain: this.domain });
    this.#boot();
  }

  async powerOff() {
    this.#run?.abort();
    this.running = false;
    this.bus.emit({ kind: 'vm.stopped', node: this.spec.name, domain: this.domain, reason: 'destroyed' });
  }

  /** pause() calls; a paused node says nothing more on its console. */
  pauses = 0;

  async pause() {
    this.pauses += 1;
    this.#run?.abort();
  }

  async destroy() {
    if (this.running) await this.powerOff();
    this.destroyed = true;
  }

  say(line: string) {
    this.bus.emit({ kind: 'vm.console', node: this.spec.name, line });
  }

  #boot() {
    const run = new AbortController();
    this.#run = run;
    this.boots++;
    const boot = this.boots;
    (async () => {
      const handled = await this.host.options.onBoot?.(this, boot);
      if (handled) return;
      await this.program(run.signal);
    })().catch(() => {});
  }

  async tick(signal: AbortSignal) {
    await new Promise((resolve) => setTimeout(resolve, this.host.options.tick ?? 3));
    if (signal.aborted) throw new Error('powered off');
  }

  /** The fixture's behaviour: Ignition on first boot, report the boot, run the pivot agent if asked. */
  async program(signal: AbortSignal) {
    const report = (json: object) => this.say(`devpivot-report: ${JSON.stringify(json)}`);
    await this.tick(signal);
    if (this.firstBoot) {
      const config = JSON.parse(this.spec.ignition) as { image?: string };
      this.pullspec = config.image;
      this.firstBoot = false;
      this.say('[    9.100000] Ignition finished successfully');
      report({ event: 'ignition', ok: true });
      await this.tick(signal);
    }
    report({ event: 'booted', bootId: `b${this.boots}`, version: this.deployed, commit: COMMITS[this.deployed] });
    if (!this.pullspec) return;
    const target = this.pullspec;
    report({ event: 'pivot', phase: 'pulling', target });
    const registry = this.host.registry;
    for (let attempt = 1; ; attempt++) {
      await this.tick(signal);
      if (registry?.up) break;
      this.say('pivot: skopeo: connection refused');
      if (attempt >= 20) {
        report({ event: 'failed', reason: 'pull failed: connection refused' });
        return;
      }
    }
    if (registry && corruptsFor(registry.faults, this.spec.name)) {
      report({ event: 'failed', reason: 'pull failed: digest mismatch' });
      return;
    }
    const want = target.includes('fixture-2') ? '2' : '1';
    if (want === this.deployed) {
      this.say('pivot: Already at target pivot; exiting...');
      report({ event: 'pivot-skipped', target, reason: 'already at target' });
      return;
    }
    report({ event: 'pivot', phase: 'staging', target });
    await this.tick(signal);
    await this.tick(signal);
    this.deployed = want;
    report({ event: 'pivot', phase: 'staged', target });
    await this.tick(signal);
    report({ event: 'pivot', phase: 'rebooting', target });
    this.say('[   61.2] reboot: Restarting system');
    // The host's contract: one vm.reboot per guest reboot.
    this.bus.emit({ kind: 'vm.reboot', node: this.spec.name, domain: this.domain });
    this.#boot();
  }
}

export class FakeHost implements VmHost {
  readonly uri = 'test:///fake';
  readonly sessionId = 'test-engine';
  readonly nodes: FakeNode[] = [];
  destroyAllCalls = 0;
  closed = false;
  registry: FakeRegistry | undefined;

  constructor(
    readonly bus: EventBus,
    readonly options: FakeOptions,
  ) {}

  async createNode(spec: NodeSpec) {
    const node = new FakeNode(spec, this);
    this.nodes.push(node);
    this.bus.emit({ kind: 'vm.defined', node: spec.name, domain: node.domain });
    return node;
  }

  async destroyAll() {
    this.destroyAllCalls++;
    for (const node of this.nodes) await node.destroy();
  }

  async close() {
    this.closed = true;
  }
}

export interface FakeWorld {
  deps: Deps;
  host: FakeHost | undefined;
  registry: FakeRegistry | undefined;
  ignition: IgnitionRequest[];
  builds: string[];
  /** pullOscontainer calls: where from, into which repository of the registry. */
  pulls: { ref: string; repository: string }[];
  /** resolveOscontainer calls (mirror mode with an upstream): reference, upstream, repository, with layers. */
  resolves: { ref: string; upstream: string; repository: string; layers: boolean }[];
  /** Repositories the MCO image was pushed to. */
  mcoPushes: string[];
  /** tagOscontainer calls: `from -> repository:tag`. */
  tags: string[];
  /** Each build's repository, format and compression, as prepare asked. */
  buildShapes: { repository: string; format?: string; compression?: string }[];
  /** The session key's known_hosts file (a fresh temporary one per run). */
  knownHosts?: string;
}

/** Deps whose VM host, registry and builder are fakes; Ignition requests are recorded and echoed as JSON. */
export function fakeDeps(options: FakeOptions = {}): FakeWorld {
  let hostKeyPairs = 0;
  const world: FakeWorld = {
    host: undefined,
    registry: undefined,
    ignition: [],
    builds: [],
    buildShapes: [],
    pulls: [],
    resolves: [],
    mcoPushes: [],
    tags: [],
    deps: undefined as never,
  };
  const fixture: FixtureArtifacts = {
    disk: '/fixture/v1.qcow2',
    repo: '/fixture/repo',
    components: '/fixture/components',
    versions: [
      { version: '1', commit: COMMITS['1']!, disk: '/fixture/v1.qcow2' },
      { version: '2', commit: COMMITS['2']!, disk: '/fixture/v2.qcow2' },
    ],
  };
  world.deps = {
    async startRegistry() {
      if (options.startRegistryError) throw options.startRegistryError;
      world.registry = new FakeRegistry();
      if (world.host) world.host.registry = world.registry;
      return world.registry;
    },
    async buildOscontainer({ source, repository, format, compression }) {
      world.builds.push(repository);
      world.buildShapes.push({ repository, format, compression });
      const commit = 'commit' in source ? source.commit : '9'.repeat(64);
      const version = Object.entries(COMMITS).find(([, c]) => c === commit)?.[0] ?? '9';
      return { digest: `sha256:${version.repeat(64)}`, commit, version };
    },
    async pullOscontainer({ ref, repository }) {
      world.pulls.push({ ref, repository });
      // A digest pullspec keeps its digest (a copy keeps the manifest's bytes); a tag resolves to a fixed one.
      const digest = /@(sha256:[0-9a-f]{64})$/.exec(ref)?.[1] ?? `sha256:${'f'.repeat(64)}`;
      return { digest, commit: COMMITS['2']!, version: '2', format: 'legacy' };
    },
    async buildDerived({ base, repository }) {
      world.builds.push(`${repository} FROM ${base}`);
      return { digest: `sha256:${'d'.repeat(64)}`, commit: COMMITS['2']!, version: '2', format: 'native' };
    },
    async resolveOscontainer({ ref, upstream, repository, layers }) {
      world.resolves.push({ ref, upstream, repository, layers });
      const digest = /@(sha256:[0-9a-f]{64})$/.exec(ref)?.[1] ?? `sha256:${'e'.repeat(64)}`;
      return { digest, commit: COMMITS['2']!, version: '2', format: 'legacy' };
    },
    async tagOscontainer({ from, repository, tag }) {
      world.tags.push(`${from} -> ${repository}:${tag}`);
    },
    async pushMcoImage({ repository }) {
      world.mcoPushes.push(repository);
      return { digest: `sha256:${'m'.repeat(64)}` };
    },
    generateIgnition(request) {
      world.ignition.push(request);
      return request;
    },
    async openHost({ bus }) {
      world.host = new FakeHost(bus, options);
      world.host.registry = world.registry;
      return world.host;
    },
    async loadFixture() {
      return fixture;
    },
    async sessionKey({ sessionId }) {
      world.knownHosts = join(tempDir('devpivot-fake-ssh-'), 'known_hosts');
      return {
        key: '/nonexistent/id_ed25519',
        publicKey: `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFAKE devpivot-${sessionId}`,
        knownHosts: world.knownHosts,
      };
    },
    async hostKeys() {
      hostKeyPairs += 1;
      return [
        { type: 'ed25519', privateKey: `FAKE PRIVATE ${hostKeyPairs}\n`, publicKey: `ssh-ed25519 FAKE${hostKeyPairs}` },
      ];
    },
  };
  return world;
}

/**
 * Run scenario text to its end on `world`'s fakes: parsed against a fixture with versions 1 and 2 (both with
 * disks) unless `env` says otherwise, a fresh bus unless one is given, nothing kept.
 */
export function runFakeScenario(
  world: FakeWorld,
  text: string,
  options: { bus?: EventBus; env?: ScenarioEnvironment; uri?: string } = {},
): Promise<RunResult> {
  return runScenario({
    scenario: parseScenario(
      text,
      '/tmp/devpivot-test.yaml',
      options.env ?? localEnvironment({ fixture: { versions: ['1', '2'], bootable: ['1', '2'] } }),
    ),
    deps: world.deps,
    bus: options.bus ?? new EventBus(),
    signal: new AbortController().signal,
    keep: false,
    stateDir: tempDir('devpivot-test-state-'),
    cacheDir: '/tmp/devpivot-test-cache',
    ...(options.uri ? { uri: options.uri } : {}),
  });
}
