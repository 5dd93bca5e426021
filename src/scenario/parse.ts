import { readFileSync } from 'node:fs';
import { basename, dirname, extname, isAbsolute, resolve } from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, type Node, type Pair, parseDocument, Scalar, type YAMLMap } from 'yaml';
import { DevpivotError, ExitCode } from '../core/errors.js';
import { PIVOT_PHASES, type PivotPhase } from '../core/events.js';
import { closest } from '../core/suggest.js';
import { PIVOT_DRIVERS, type PivotDriver } from '../ignition/fragments.js';
import {
  EXPECT_EVENTS,
  type ExpectEvent,
  type ImageSource,
  type NodeDef,
  type OscontainerSource,
  type Position,
  REGISTRY_FAULTS,
  type RegistryFault,
  type RegistrySpec,
  type Scenario,
  type Step,
} from './types.js';
import { formatDuration, parseDuration, parseSize } from './units.js';

export interface ScenarioIssue extends Position {
  message: string;
  hint?: string;
}

/** A scenario file that does not follow the schema: every issue with its position. Exit status 2. */
export class ScenarioError extends DevpivotError {
  constructor(
    readonly file: string,
    readonly issues: ScenarioIssue[],
  ) {
    const lines = issues.map(
      (issue) => `${file}:${issue.line}:${issue.col}: ${issue.message}${issue.hint ? ` (${issue.hint})` : ''}`,
    );
    super('SCENARIO_INVALID', `${issues.length} problem(s) in scenario ${file}:\n${lines.join('\n')}`, {
      hint: 'see scenarios/README.md for the schema',
      exitCode: ExitCode.usage,
    });
    this.name = 'ScenarioError';
  }
}

/** Thrown inside the walker to abandon one entry; collected into ScenarioError. */
class Issue extends Error {
  constructor(readonly issue: ScenarioIssue) {
    super(issue.message);
  }
}

const DEFAULTS = { memoryMiB: 1024, vcpus: 1, firmware: 'bios' as const, driver: 'legacy' as const };
const DEFAULT_WITHIN_MS = 5 * 60_000;
const DEFAULT_TIMEOUT_MS = 30 * 60_000;
const NAME = /^[a-z][a-z0-9-]{0,30}$/;

/** Read and validate a scenario file. Relative paths inside it are resolved against its directory. */
export function loadScenario(file: string): Scenario {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new DevpivotError('SCENARIO_NOT_FOUND', `cannot read scenario ${file}: ${(error as Error).message}`, {
      hint: 'pass a path to a .yaml scenario, e.g. scenarios/old-to-new.yaml',
      exitCode: ExitCode.usage,
      cause: error,
    });
  }
  return parseScenario(text, file);
}

/** Validate scenario text. `file` names it in messages and anchors relative paths. */
export function parseScenario(text: string, file: string): Scenario {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const issues: ScenarioIssue[] = [];
  const at = (node: Node | Pair | null | undefined): Position => {
    const offset = nodeOffset(node);
    const pos = lineCounter.linePos(offset);
    return { line: pos.line, col: pos.col };
  };
  if (doc.errors.length > 0) {
    for (const error of doc.errors) {
      const pos = lineCounter.linePos(error.pos[0]);
      issues.push({ line: pos.line, col: pos.col, message: `YAML syntax: ${error.message.split('\n')[0]}` });
    }
    throw new ScenarioError(file, issues);
  }
  const walker = new Walker(at, issues, dirname(resolve(file)));
  const scenario = walker.guard(() => walker.scenario(doc.contents, file));
  if (issues.length > 0 || !scenario)
    throw new ScenarioError(
      file,
      issues.sort((a, b) => a.line - b.line || a.col - b.col),
    );
  return scenario;
}

function nodeOffset(node: Node | Pair | null | undefined): number {
  if (!node) return 0;
  if ('range' in node && node.range) return node.range[0];
  if ('key' in node) return nodeOffset(node.key as Node) || nodeOffset(node.value as Node);
  return 0;
}

type Fields = Map<string, { key: Node; value: Node | null; pair: Pair }>;

class Walker {
  constructor(
    readonly at: (node: Node | Pair | null | undefined) => Position,
    readonly issues: ScenarioIssue[],
    readonly baseDir: string,
  ) {}

  /** Names whose definition had an issue: references to them are not reported again. */
  readonly broken = new Set<string>();

  fail(node: Node | Pair | null | undefined, message: string, hint?: string): never {
    throw new Issue({ ...this.at(node), message, ...(hint ? { hint } : {}) });
  }

  /** Run one part; an issue is recorded and parsing goes on with the next part. */
  guard<T>(fn: () => T): T | undefined {
    try {
      return fn();
    } catch (error) {
      if (!(error instanceof Issue)) throw error;
      this.issues.push(error.issue);
      return undefined;
    }
  }

  map(node: Node | null, what: string): YAMLMap<Node, Node | null> {
    if (!isMap(node)) this.fail(node, `${what} must be a mapping (key: value), got ${describe(node)}`);
    return node as YAMLMap<Node, Node | null>;
  }

  /** The keys of a mapping, checked against `allowed`, with "did you mean" for typos. */
  fields(node: Node | null, what: string, allowed: string[], required: string[] = []): Fields {
    const map = this.map(node, what);
    const out: Fields = new Map();
    for (const pair of map.items) {
      const key = pair.key as Node;
      if (!isScalar(key) || typeof key.value !== 'string') this.fail(key, `${what}: keys must be plain words`);
      const name = key.value as string;
      if (!allowed.includes(name)) {
        const guess = closest(name, allowed);
        this.guard(() =>
          this.fail(
            key,
            `unknown key '${name}' in ${what}`,
            guess ? `did you mean '${guess}'?` : `expected one of: ${allowed.join(', ')}`,
          ),
        );
        continue;
      }
      out.set(name, { key, value: pair.value, pair });
    }
    for (const name of required) {
      if (!out.has(name)) this.fail(node, `${what} needs '${name}'`);
    }
    return out;
  }

  string(node: Node | null, what: string): string {
    if (!isScalar(node) || (typeof node.value !== 'string' && typeof node.value !== 'number'))
      this.fail(node, `${what} must be a string, got ${describe(node)}`);
    return String((node as { value: unknown }).value);
  }

  oneOf<T extends string>(node: Node | null, what: string, choices: readonly T[]): T {
    const value = this.string(node, what);
    if (!choices.includes(value as T)) {
      const guess = closest(value, choices);
      this.fail(
        node,
        `${what} must be one of ${choices.join(', ')}; got '${value}'`,
        guess ? `did you mean '${guess}'?` : undefined,
      );
    }
    return value as T;
  }

  duration(node: Node | null, what: string): number {
    const raw = isScalar(node) ? node.value : undefined;
    const ms = typeof raw === 'string' || typeof raw === 'number' ? parseDuration(raw) : undefined;
    if (ms === undefined) this.fail(node, `${what} must be a duration like 90s, 5m or 1m30s; got ${describe(node)}`);
    return ms;
  }

  integer(node: Node | null, what: string, min: number, max: number): number {
    const raw = isScalar(node) ? node.value : undefined;
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < min || raw > max)
      this.fail(node, `${what} must be a whole number from ${min} to ${max}; got ${describe(node)}`);
    return raw as number;
  }

  boolean(node: Node | null, what: string): boolean {
    if (!isScalar(node) || typeof node.value !== 'boolean') this.fail(node, `${what} must be true or false`);
    return node.value as boolean;
  }

  stringList(node: Node | null, what: string): string[] {
    if (isScalar(node)) return [this.string(node, what)];
    if (!isSeq(node)) this.fail(node, `${what} must be a list of strings`);
    return (node.items as Node[]).map((item, i) => this.string(item, `${what}[${i}]`));
  }

  path(value: string): string {
    return isAbsolute(value) ? value : resolve(this.baseDir, value);
  }

  // ---- sections ---------------------------------------------------------------------------------------------

  scenario(root: Node | null, file: string): Scenario | undefined {
    if (root === null || (isScalar(root) && root.value === null))
      this.fail(root, 'the scenario is empty', "a minimal scenario has 'nodes:' with one node");
    const top = this.fields(root, 'the scenario', [
      'name',
      'description',
      'timeout',
      'images',
      'oscontainers',
      'registry',
      'nodes',
      'steps',
    ]);
    const images = new Map<string, ImageSource>();
    const oscontainers = new Map<string, OscontainerSource>();
    const get = (key: string) => top.get(key)?.value ?? null;
    const name = top.has('name')
      ? (this.guard(() => this.string(get('name'), 'name')) ?? '')
      : basename(file, extname(file));
    const description = top.has('description')
      ? this.guard(() => this.string(get('description'), 'description'))
      : undefined;
    const timeoutMs = top.has('timeout')
      ? (this.guard(() => this.duration(get('timeout'), 'timeout')) ?? DEFAULT_TIMEOUT_MS)
      : DEFAULT_TIMEOUT_MS;
    if (top.has('images')) this.guard(() => this.images(get('images'), images));
    if (top.has('oscontainers')) this.guard(() => this.oscontainers(get('oscontainers'), oscontainers));
    const registry: RegistrySpec = top.has('registry')
      ? (this.guard(() => this.registry(get('registry'))) ?? { kind: 'embedded' })
      : { kind: 'embedded' };
    if (!top.has('nodes')) this.fail(root, "the scenario needs 'nodes:' (at least one node)");
    const nodes = this.nodes(get('nodes'), images, oscontainers);
    const steps = top.has('steps') ? this.steps(get('steps'), nodes, images, oscontainers) : defaultSteps(nodes);
    return {
      file,
      name,
      ...(description !== undefined ? { description } : {}),
      timeoutMs,
      images,
      oscontainers,
      registry,
      nodes,
      steps,
    };
  }

  images(node: Node | null, out: Map<string, ImageSource>): void {
    const map = this.map(node, 'images');
    for (const pair of map.items) {
      this.guard(() => {
        const name = this.name(pair.key as Node, 'image name');
        this.broken.add(name);
        out.set(name, this.image(pair.value as Node | null, `image '${name}'`));
        this.broken.delete(name);
      });
    }
  }

  image(node: Node | null, what: string): ImageSource {
    if (isScalar(node)) {
      const text = this.string(node, what);
      const fixture = /^fixture:(\S+)$/.exec(text);
      if (fixture) return { kind: 'fixture', version: fixture[1]! };
      if (/^https?:/.test(text)) this.fail(node, `${what}: a URL needs a checksum`, 'write { url: ..., sha256: ... }');
      return { kind: 'path', path: this.path(text) };
    }
    const f = this.fields(node, what, ['fixture', 'path', 'url', 'sha256']);
    const sha = f.has('sha256') ? this.sha256(f.get('sha256')!.value, `${what}.sha256`) : undefined;
    if (f.has('fixture')) return { kind: 'fixture', version: this.string(f.get('fixture')!.value, `${what}.fixture`) };
    if (f.has('url')) {
      if (!sha) this.fail(node, `${what}: a URL needs 'sha256'`);
      return { kind: 'url', url: this.string(f.get('url')!.value, `${what}.url`), sha256: sha };
    }
    if (f.has('path'))
      return {
        kind: 'path',
        path: this.path(this.string(f.get('path')!.value, `${what}.path`)),
        ...(sha ? { sha256: sha } : {}),
      };
    this.fail(node, `${what} needs one of 'fixture', 'path' or 'url'`);
  }

  sha256(node: Node | null, what: string): string {
    const value = this.string(node, what).replace(/^sha256:/, '');
    if (!/^[0-9a-f]{64}$/.test(value)) this.fail(node, `${what} must be 64 lowercase hex digits`);
    return value;
  }

  oscontainers(node: Node | null, out: Map<string, OscontainerSource>): void {
    const map = this.map(node, 'oscontainers');
    for (const pair of map.items) {
      this.guard(() => {
        const name = this.name(pair.key as Node, 'oscontainer name');
        this.broken.add(name);
        out.set(name, this.oscontainer(pair.value as Node | null, `oscontainer '${name}'`));
        this.broken.delete(name);
      });
    }
  }

  oscontainer(node: Node | null, what: string): OscontainerSource {
    if (isScalar(node)) return this.buildSource(node, what);
    const f = this.fields(node, what, ['build', 'pull']);
    if (f.has('build') === f.has('pull')) this.fail(node, `${what} needs exactly one of 'build' or 'pull'`);
    if (f.has('pull')) {
      const ref = this.string(f.get('pull')!.value, `${what}.pull`);
      if (!/^[^\s@]+(:[^\s@/]+)?(@sha256:[0-9a-f]{64})?$/.test(ref))
        this.fail(f.get('pull')!.value, `${what}.pull must be an image reference like host/repo:tag or @sha256:...`);
      return { kind: 'pull', ref };
    }
    return this.buildSource(f.get('build')!.value, `${what}.build`);
  }

  buildSource(node: Node | null, what: string): OscontainerSource {
    if (isScalar(node)) {
      const text = this.string(node, what);
      const fixture = /^fixture:(\S+)$/.exec(text);
      if (!fixture) this.fail(node, `${what} must be fixture:N or { repo, commit } or { rootfs }; got '${text}'`);
      return { kind: 'build-fixture', version: fixture[1]! };
    }
    const f = this.fields(node, what, ['fixture', 'repo', 'commit', 'rootfs', 'version']);
    if (f.has('fixture')) return { kind: 'build-fixture', version: this.string(f.get('fixture')!.value, what) };
    if (f.has('rootfs')) {
      const version = f.has('version') ? this.string(f.get('version')!.value, `${what}.version`) : undefined;
      return {
        kind: 'build-rootfs',
        rootfs: this.path(this.string(f.get('rootfs')!.value, `${what}.rootfs`)),
        ...(version ? { version } : {}),
      };
    }
    if (f.has('repo')) {
      if (!f.has('commit')) this.fail(node, `${what} needs 'commit' with 'repo'`);
      const commit = this.string(f.get('commit')!.value, `${what}.commit`);
      if (!/^[0-9a-f]{64}$/.test(commit))
        this.fail(f.get('commit')!.value, `${what}.commit must be a 64-hex ostree checksum`);
      return { kind: 'build-ostree', repo: this.path(this.string(f.get('repo')!.value, `${what}.repo`)), commit };
    }
    this.fail(node, `${what} needs 'fixture', 'repo' + 'commit', or 'rootfs'`);
  }

  registry(node: Node | null): RegistrySpec {
    if (isScalar(node)) {
      const text = this.string(node, 'registry');
      if (text === 'embedded') return { kind: 'embedded' };
      if (/^https?:\/\//.test(text)) return { kind: 'external', url: text.replace(/\/+$/, '') };
      this.fail(node, `registry must be 'embedded' or an http(s) URL; got '${text}'`);
    }
    const f = this.fields(node, 'registry', ['url'], ['url']);
    const url = this.string(f.get('url')!.value, 'registry.url');
    if (!/^https?:\/\//.test(url)) this.fail(f.get('url')!.value, 'registry.url must start with http:// or https://');
    return { kind: 'external', url: url.replace(/\/+$/, '') };
  }

  name(key: Node, what: string): string {
    const name = this.string(key, what);
    if (!NAME.test(name))
      this.fail(key, `${what} '${name}' must be lowercase letters, digits and '-', starting with a letter (max 31)`);
    return name;
  }

  /** `fixture:N` used directly as a reference registers an implicit image / oscontainer of that name. */
  ref(node: Node | null, what: string, known: Map<string, unknown>, implicit: (version: string) => unknown): string {
    const text = this.string(node, what);
    if (known.has(text) || this.broken.has(text)) return text;
    const fixture = /^fixture:(\S+)$/.exec(text);
    if (fixture) {
      known.set(text, implicit(fixture[1]!));
      return text;
    }
    const guess = closest(text, known.keys());
    this.fail(
      node,
      `${what} '${text}' is not defined`,
      guess
        ? `did you mean '${guess}'?`
        : `define it under ${what.includes('image') ? 'images' : 'oscontainers'}: or use fixture:N`,
    );
  }

  nodes(node: Node | null, images: Map<string, ImageSource>, oscontainers: Map<string, OscontainerSource>): NodeDef[] {
    const map = this.map(node, 'nodes');
    if (map.items.length === 0) this.fail(node, 'nodes needs at least one node');
    const out: NodeDef[] = [];
    for (const pair of map.items) {
      this.guard(() => {
        const name = this.name(pair.key as Node, 'node name');
        const what = `node '${name}'`;
        const value = pair.value as Node | null;
        const f =
          value === null || (isScalar(value) && value.value === null)
            ? (new Map() as Fields)
            : this.fields(value, what, [
                'image',
                'memory',
                'vcpus',
                'firmware',
                'driver',
                'pivot',
                'kernel-args',
                'ignition',
              ]);
        const v = (key: string) => f.get(key)?.value ?? null;
        const image = f.has('image')
          ? this.ref(v('image'), `${what} image`, images, (version) => ({ kind: 'fixture', version }))
          : this.ref(scalarLike('fixture:1'), `${what} image`, images, (version) => ({ kind: 'fixture', version }));
        let memoryMiB: number = DEFAULTS.memoryMiB;
        if (f.has('memory')) {
          const raw = isScalar(v('memory')) ? (v('memory') as { value: unknown }).value : undefined;
          const bytes = typeof raw === 'string' || typeof raw === 'number' ? parseSize(raw, 1024 ** 2) : undefined;
          if (bytes === undefined || bytes < 256 * 1024 ** 2)
            this.fail(v('memory'), `${what} memory must be a size of at least 256MiB like 1024 (MiB) or 2GiB`);
          memoryMiB = Math.round(bytes / 1024 ** 2);
        }
        const vcpus = f.has('vcpus') ? this.integer(v('vcpus'), `${what} vcpus`, 1, 64) : DEFAULTS.vcpus;
        const firmware = f.has('firmware')
          ? this.oneOf(v('firmware'), `${what} firmware`, ['bios', 'uefi'] as const)
          : DEFAULTS.firmware;
        const driver: PivotDriver = f.has('driver')
          ? this.oneOf(v('driver'), `${what} driver`, PIVOT_DRIVERS)
          : DEFAULTS.driver;
        const pivot = f.has('pivot')
          ? this.ref(v('pivot'), `${what} pivot target oscontainer`, oscontainers, (version) => ({
              kind: 'build-fixture',
              version,
            }))
          : undefined;
        const kernelArgs = { add: [] as string[], delete: [] as string[] };
        if (f.has('kernel-args')) {
          const ka = this.fields(v('kernel-args'), `${what} kernel-args`, ['add', 'delete']);
          if (ka.has('add')) kernelArgs.add = this.stringList(ka.get('add')!.value, `${what} kernel-args.add`);
          if (ka.has('delete'))
            kernelArgs.delete = this.stringList(ka.get('delete')!.value, `${what} kernel-args.delete`);
          if (driver !== 'legacy' && kernelArgs.add.length + kernelArgs.delete.length > 0)
            this.fail(v('kernel-args'), `${what} kernel-args need the legacy driver (it reads /etc/pivot/kernel-args)`);
        }
        let ignition: Record<string, unknown> | undefined;
        if (f.has('ignition')) {
          this.map(v('ignition'), `${what} ignition`);
          ignition = (v('ignition') as YAMLMap).toJSON() as Record<string, unknown>;
        }
        if (out.some((other) => other.name === name)) this.fail(pair.key as Node, `node '${name}' is defined twice`);
        out.push({
          name,
          image,
          memoryMiB,
          vcpus,
          firmware,
          driver,
          ...(pivot ? { pivot } : {}),
          kernelArgs,
          ...(ignition ? { ignition } : {}),
          pos: this.at(pair.key as Node),
        });
      });
    }
    if (out.length === 0 && this.issues.length === 0) this.fail(node, 'nodes needs at least one node');
    return out;
  }

  // ---- steps ------------------------------------------------------------------------------------------------

  steps(
    node: Node | null,
    nodes: NodeDef[],
    images: Map<string, ImageSource>,
    oscontainers: Map<string, OscontainerSource>,
  ): Step[] {
    if (!isSeq(node)) this.fail(node, `steps must be a list (- up, - expect: ...), got ${describe(node)}`);
    const out: Step[] = [];
    let upSeen = false;
    for (const item of node.items as Node[]) {
      const step = this.guard(() => this.step(item, nodes, images, oscontainers));
      if (!step) continue;
      if (step.kind === 'up') upSeen = true;
      else if (!upSeen && ['expect', 'assert', 'power-off', 'reboot', 'pivot'].includes(step.kind))
        this.guard(() => this.fail(item, `'${step.kind}' needs a running node: put '- up' before it`));
      out.push(step);
    }
    if (out.length === 0 && this.issues.length === 0) this.fail(node, 'steps is empty', "start with '- up'");
    return out;
  }

  step(
    item: Node,
    nodes: NodeDef[],
    images: Map<string, ImageSource>,
    oscontainers: Map<string, OscontainerSource>,
  ): Step {
    const pos = this.at(item);
    const kinds = ['up', 'expect', 'assert', 'fault', 'power-off', 'reboot', 'wait', 'pivot', 'down'];
    let kind: string;
    let body: Node | null = null;
    if (isScalar(item)) {
      kind = this.string(item, 'step');
    } else {
      const map = this.map(item, 'a step');
      if (map.items.length !== 1)
        this.fail(
          item,
          `a step has exactly one key (its kind), got ${map.items.length}`,
          `one of: ${kinds.join(', ')}`,
        );
      const pair = map.items[0]!;
      kind = this.string(pair.key as Node, 'step kind');
      body = pair.value as Node | null;
      item = pair.key as Node;
    }
    if (!kinds.includes(kind)) {
      const guess = closest(kind, kinds);
      this.fail(
        item,
        `unknown step '${kind}'`,
        guess ? `did you mean '${guess}'?` : `expected one of: ${kinds.join(', ')}`,
      );
    }
    const names = nodes.map((n) => n.name);
    const nodeRef = (n: Node | null | undefined, owner: Node | null): string => {
      if (n === undefined || n === null) {
        if (names.length === 1) return names[0]!;
        this.fail(
          owner ?? item,
          `'${kind}' needs 'node:' when the scenario has more than one node`,
          `one of: ${names.join(', ')}`,
        );
      }
      const name = this.string(n, `${kind} node`);
      if (!names.includes(name)) {
        const guess = closest(name, names);
        this.fail(n, `unknown node '${name}'`, guess ? `did you mean '${guess}'?` : `nodes are: ${names.join(', ')}`);
      }
      return name;
    };
    const bootedRef = (n: Node | null): string => {
      const text = this.string(n, 'booted');
      if (oscontainers.has(text) || images.has(text) || this.broken.has(text)) return text;
      const fixture = /^fixture:(\S+)$/.exec(text);
      if (fixture) {
        images.set(text, { kind: 'fixture', version: fixture[1]! });
        return text;
      }
      const guess = closest(text, [...oscontainers.keys(), ...images.keys()]);
      this.fail(n, `'${text}' is neither an oscontainer nor an image`, guess ? `did you mean '${guess}'?` : undefined);
    };
    switch (kind) {
      case 'up': {
        const list =
          body === null
            ? names
            : this.stringList(body, 'up').map((_name, i) =>
                nodeRef(isSeq(body) ? (body.items[i] as Node) : body, body),
              );
        return { kind, nodes: list, pos, label: list.length === names.length ? 'up' : `up ${list.join(', ')}` };
      }
      case 'down':
        if (body !== null) this.fail(body, "'down' takes no arguments");
        return { kind, pos, label: 'down' };
      case 'wait': {
        const ms = this.duration(body, 'wait');
        return { kind, ms, pos, label: `wait ${formatDuration(ms)}` };
      }
      case 'reboot': {
        const name = isScalar(body)
          ? nodeRef(body, body)
          : body === null
            ? nodeRef(null, item)
            : nodeRef(this.fields(body, 'reboot', ['node']).get('node')?.value, body);
        return { kind, node: name, pos, label: `reboot ${name}` };
      }
      case 'pivot': {
        const f = isScalar(body) ? new Map([['node', { value: body }]]) : this.fields(body, 'pivot', ['node', 'to']);
        const name = nodeRef(f.get('node')?.value as Node | undefined, body);
        const def = nodes.find((n) => n.name === name)!;
        const to = f.has('to') ? this.string(f.get('to')!.value as Node, 'pivot.to') : def.pivot;
        if (!to) this.fail(body ?? item, `node '${name}' has no pivot target`, "set 'pivot:' on the node");
        if (to !== def.pivot)
          this.fail(
            (f.get('to')?.value as Node) ?? item,
            `pivot.to '${to}' differs from node '${name}' pivot target '${def.pivot ?? '(none)'}'`,
            'a running node re-runs the pivot its Ignition configured; devpivot has no agent in the guest',
          );
        return { kind, node: name, to, pos, label: `pivot ${name} to ${to}` };
      }
      case 'fault': {
        const f = this.fields(body, 'fault', ['registry', 'rate'], ['registry']);
        const registry: RegistryFault = this.oneOf(f.get('registry')!.value, 'fault.registry', REGISTRY_FAULTS);
        if (registry === 'slow') {
          const raw = f.get('rate')?.value;
          const text = isScalar(raw) ? String(raw.value).replace(/\/s$/, '') : '1MiB';
          const rate = parseSize(text, 1);
          if (rate === undefined) this.fail(raw ?? body, 'fault.rate must be a size per second like 1MiB/s');
          return { kind, registry, bytesPerSecond: rate, pos, label: `fault registry slow ${text}/s` };
        }
        if (f.has('rate')) this.fail(f.get('rate')!.key, "'rate' only applies to 'registry: slow'");
        return { kind, registry, pos, label: `fault registry ${registry}` };
      }
      case 'power-off': {
        const f = isScalar(body)
          ? new Map([['node', { value: body }]])
          : body === null
            ? new Map()
            : this.fields(body, 'power-off', ['node', 'when', 'after', 'within', 'restart']);
        const name = nodeRef(f.get('node')?.value as Node | undefined, body);
        const whenNode = f.get('when')?.value as Node | undefined;
        let when: PivotPhase | undefined;
        if (whenNode) {
          const text = this.string(whenNode, 'power-off.when').replace(/^pivot\./, '');
          if (text !== 'now') when = this.oneOf(scalarLike(text, whenNode), 'power-off.when', PIVOT_PHASES);
        }
        const afterMs = f.has('after') ? this.duration(f.get('after')!.value as Node, 'power-off.after') : 0;
        const withinMs = f.has('within')
          ? this.duration(f.get('within')!.value as Node, 'power-off.within')
          : DEFAULT_WITHIN_MS;
        const restart = f.has('restart') ? this.boolean(f.get('restart')!.value as Node, 'power-off.restart') : true;
        const label = `power-off ${name}${when ? ` when ${when}` : ''}${afterMs ? ` +${formatDuration(afterMs)}` : ''}${restart ? ', power on' : ''}`;
        return { kind, node: name, ...(when ? { when } : {}), afterMs, withinMs, restart, pos, label };
      }
      case 'expect': {
        const f = this.fields(body, 'expect', ['node', 'event', 'booted', 'console', 'match', 'within']);
        const name = nodeRef(f.get('node')?.value, body);
        const forms = ['event', 'booted', 'console'].filter((key) => f.has(key));
        if (forms.length !== 1)
          this.fail(
            body,
            `expect needs exactly one of 'event', 'booted' or 'console'${forms.length ? `, got ${forms.join(' and ')}` : ''}`,
          );
        const withinMs = f.has('within') ? this.duration(f.get('within')!.value, 'expect.within') : DEFAULT_WITHIN_MS;
        const within = ` within ${formatDuration(withinMs)}`;
        if (f.has('booted')) {
          const booted = bootedRef(f.get('booted')!.value);
          return {
            kind,
            node: name,
            event: 'booted',
            booted,
            withinMs,
            pos,
            label: `expect ${name} booted ${booted}${within}`,
          };
        }
        if (f.has('console')) {
          const match = this.regex(f.get('console')!.value, 'expect.console');
          return {
            kind,
            node: name,
            event: 'console',
            match,
            withinMs,
            pos,
            label: `expect ${name} console /${match}/${within}`,
          };
        }
        const raw = this.string(f.get('event')!.value, 'expect.event');
        const event: ExpectEvent = this.oneOf(
          scalarLike(
            /^(pulling|staging|staged|rebooting|skipped)$/.test(raw) ? `pivot.${raw}` : raw,
            f.get('event')!.value,
          ),
          'expect.event',
          EXPECT_EVENTS,
        );
        if (event === 'console')
          this.fail(f.get('event')!.value, "write 'console: <regex>' instead of 'event: console'");
        const match = f.has('match') ? this.regex(f.get('match')!.value, 'expect.match') : undefined;
        if (match !== undefined && event !== 'failure')
          this.fail(f.get('match')!.key, "'match' applies to 'event: failure' (the reason) only");
        return {
          kind,
          node: name,
          event,
          withinMs,
          ...(match !== undefined ? { match } : {}),
          pos,
          label: `expect ${name} ${event}${match ? ` /${match}/` : ''}${within}`,
        };
      }
      case 'assert': {
        const f = this.fields(body, 'assert', ['node', 'booted', 'reboots', 'failed']);
        const name = nodeRef(f.get('node')?.value, body);
        const booted = f.has('booted') ? bootedRef(f.get('booted')!.value) : undefined;
        const reboots = f.has('reboots') ? this.integer(f.get('reboots')!.value, 'assert.reboots', 0, 1000) : undefined;
        const failed = f.has('failed') ? this.boolean(f.get('failed')!.value, 'assert.failed') : undefined;
        if (booted === undefined && reboots === undefined && failed === undefined)
          this.fail(body, "assert needs 'booted', 'reboots' or 'failed'");
        const parts = [
          booted !== undefined ? `booted ${booted}` : '',
          reboots !== undefined ? `reboots=${reboots}` : '',
          failed !== undefined ? `failed=${failed}` : '',
        ].filter(Boolean);
        return {
          kind,
          node: name,
          ...(booted !== undefined ? { booted } : {}),
          ...(reboots !== undefined ? { reboots } : {}),
          ...(failed !== undefined ? { failed } : {}),
          pos,
          label: `assert ${name} ${parts.join(' ')}`,
        };
      }
    }
    this.fail(item, `unknown step '${kind}'`);
  }

  regex(node: Node | null, what: string): string {
    const text = this.string(node, what);
    try {
      new RegExp(text);
    } catch (error) {
      this.fail(node, `${what} is not a valid regular expression: ${(error as Error).message}`);
    }
    return text;
  }
}

/** Steps when the file has none: boot everything, and for every node with a target, see it boot the target. */
function defaultSteps(nodes: NodeDef[]): Step[] {
  const pos = { line: 1, col: 1 };
  const steps: Step[] = [{ kind: 'up', nodes: nodes.map((n) => n.name), pos, label: 'up' }];
  for (const node of nodes) {
    if (!node.pivot) {
      steps.push({
        kind: 'expect',
        node: node.name,
        event: 'booted',
        withinMs: DEFAULT_WITHIN_MS,
        pos,
        label: `expect ${node.name} booted within 5m`,
      });
      continue;
    }
    steps.push({
      kind: 'expect',
      node: node.name,
      event: 'booted',
      booted: node.pivot,
      withinMs: 2 * DEFAULT_WITHIN_MS,
      pos,
      label: `expect ${node.name} booted ${node.pivot} within 10m`,
    });
    steps.push({
      kind: 'assert',
      node: node.name,
      booted: node.pivot,
      pos,
      label: `assert ${node.name} booted ${node.pivot}`,
    });
  }
  return steps;
}

/** A synthetic scalar carrying another node's position, so errors still point at the source. */
function scalarLike(value: string, from?: Node | null): Node {
  const scalar = new Scalar(value);
  scalar.range = from?.range ?? [0, 0, 0];
  return scalar;
}

function describe(node: Node | null | undefined): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) return node.value === null ? 'nothing' : `${typeof node.value} '${String(node.value)}'`;
  return 'something else';
}
