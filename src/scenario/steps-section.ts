/**
 * `steps:`: a list of `- kind` or `- kind: body`. The kind picks the step's definition from `src/steps/` (the one
 * map of kinds); its parse reads the body through a StepReader implemented here over the document reader.
 */
import { isScalar, isSeq, type Node } from 'yaml';
import { closest } from '../core/suggest.js';
import { DRIVERS } from '../drivers/index.js';
import { isStepKind, minimumMs, nodesOf, parseStep, STEP_KINDS, STEPS, type Step } from '../steps/index.js';
import type { Fields, StepReader, YamlValue } from '../steps/reader.js';
import { formatDuration } from '../steps/units.js';
import { looksLikePullspec } from './pullspec.js';
import { type DocumentReader, describe, scalarLike } from './reader.js';
import { parseTagRef, TAG_REF_HINT } from './tag-ref.js';
import type { ImageSource, NodeDef, OscontainerSource } from './types.js';

interface Context {
  nodes: NodeDef[];
  images: Map<string, ImageSource>;
  oscontainers: Map<string, OscontainerSource>;
  /** The scenario's `timeout`: no step may wait longer, and the waits together must fit in it. */
  timeoutMs: number;
  registry: 'embedded' | 'external';
}

export function readSteps(r: DocumentReader, node: Node | null, context: Context): Step[] {
  if (!isSeq(node)) r.fail(node, `steps must be a list (- up, - expect: ...), got ${describe(node)}`);
  const out: Step[] = [];
  const up = new Set<string>();
  let waited = 0;
  for (const item of node.items as Node[]) {
    const step = r.guard(() => readStep(r, item, context));
    if (!step) continue;
    r.guard(() => checkOrder(r, item, step, up));
    waited += minimumMs(step);
    if (waited > context.timeoutMs)
      r.guard(() =>
        r.fail(
          item,
          `the steps up to here wait at least ${formatDuration(waited)}, longer than the scenario's timeout of ${formatDuration(context.timeoutMs)}`,
          "shorten the waits or raise 'timeout:'",
        ),
      );
    out.push(step);
  }
  if (out.length === 0 && r.issues.length === 0) r.fail(node, 'steps is empty', "start with '- up'");
  return out;
}

/** A step on a node that is not up yet (or an `up` of one that is) can never be satisfied. */
function checkOrder(r: DocumentReader, item: Node, step: Step, up: Set<string>): void {
  const relation = STEPS[step.kind].schema.nodes;
  if (relation === 'removes') up.clear();
  const nodes = nodesOf(step);
  if (relation === 'starts') {
    const again = nodes.filter((name) => up.has(name));
    for (const name of nodes) up.add(name);
    if (again.length > 0)
      r.fail(
        item,
        `'up' of node ${again.map((n) => `'${n}'`).join(', ')}, which is up already`,
        "a node is started once; use '- reboot' to restart it, or '- down' first",
      );
  }
  if (relation !== 'needs-running') return;
  const missing = nodes.filter((name) => !up.has(name));
  if (missing.length > 0)
    r.fail(
      item,
      `'${step.kind}' on node '${missing[0]}', which is not up at this point`,
      `put '- up' (or '- up: [${missing[0]}]') before it`,
    );
}

function readStep(r: DocumentReader, item: Node, context: Context): Step {
  const pos = r.at(item);
  let kind: string;
  let key = item;
  let body: Node | null = null;
  if (isScalar(item)) {
    kind = r.string(item, 'step');
  } else {
    const map = r.map(item, 'a step');
    if (map.items.length !== 1)
      r.fail(
        item,
        `a step has exactly one key (its kind), got ${map.items.length}`,
        `one of: ${STEP_KINDS.join(', ')}`,
      );
    const pair = map.items[0]!;
    kind = r.string(pair.key as Node, 'step kind');
    body = pair.value as Node | null;
    key = pair.key as Node;
  }
  if (!isStepKind(kind)) {
    const guess = closest(kind, STEP_KINDS);
    r.fail(
      key,
      `unknown step '${kind}'`,
      guess ? `did you mean '${guess}'?` : `expected one of: ${STEP_KINDS.join(', ')}`,
    );
  }
  return parseStep(kind, { body: value(body), key: value(key)!, pos }, new StepBodyReader(r, kind, key, context));
}

// YamlValue is what steps see of a yaml Node: the same object, opaque to them.
function node(v: YamlValue | null | undefined): Node | null | undefined {
  return v as unknown as Node | null | undefined;
}
function value(n: Node | null): YamlValue | null {
  return n as unknown as YamlValue | null;
}

/** The StepReader of one step: the document reader's checks, plus the step's references to nodes and images. */
class StepBodyReader implements StepReader {
  readonly nodes: readonly string[];
  readonly registry: 'embedded' | 'external';

  constructor(
    readonly r: DocumentReader,
    readonly kind: string,
    readonly key: Node,
    readonly context: Context,
  ) {
    this.nodes = context.nodes.map((n) => n.name);
    this.registry = context.registry;
  }

  fail(at: YamlValue | null, message: string, hint?: string): never {
    this.r.fail(node(at), message, hint);
  }
  fields(v: YamlValue | null, what: string, allowed: readonly string[], required?: readonly string[]): Fields {
    return this.r.fields(node(v) ?? null, what, allowed, required) as unknown as Fields;
  }
  isScalar(v: YamlValue | null | undefined): v is YamlValue {
    return isScalar(node(v));
  }
  listItems(v: YamlValue | null): readonly YamlValue[] | undefined {
    const n = node(v);
    return isSeq(n) ? (n.items as unknown as YamlValue[]) : undefined;
  }
  scalarText(v: YamlValue | null | undefined): string | undefined {
    const n = node(v);
    return isScalar(n) ? String(n.value) : undefined;
  }
  string(v: YamlValue | null, what: string): string {
    return this.r.string(node(v) ?? null, what);
  }
  oneOf<T extends string>(v: YamlValue | null, what: string, choices: readonly T[]): T {
    return this.r.oneOf(node(v) ?? null, what, choices);
  }
  duration(v: YamlValue | null, what: string, options: { min?: number } = {}): number {
    return this.r.duration(node(v) ?? null, what, {
      ...options,
      max: this.context.timeoutMs,
      maxWhy: `the scenario's timeout of ${formatDuration(this.context.timeoutMs)}`,
    });
  }
  integer(v: YamlValue | null, what: string, min: number, max: number): number {
    return this.r.integer(node(v) ?? null, what, min, max);
  }
  boolean(v: YamlValue | null, what: string): boolean {
    return this.r.boolean(node(v) ?? null, what);
  }
  regex(v: YamlValue | null, what: string): string {
    return this.r.regex(node(v) ?? null, what);
  }
  stringList(v: YamlValue | null, what: string): string[] {
    return this.r.stringList(node(v) ?? null, what);
  }
  rewritten(text: string, from: YamlValue | null | undefined): YamlValue {
    return value(scalarLike(text, node(from)))!;
  }

  node(v: YamlValue | null | undefined, owner: YamlValue | null): string {
    const names = this.nodes;
    const n = node(v);
    if (n === undefined || n === null) {
      if (names.length === 1) return names[0]!;
      this.r.fail(
        node(owner) ?? this.key,
        `'${this.kind}' needs 'node:' when the scenario has more than one node`,
        `one of: ${names.join(', ')}`,
      );
    }
    const name = this.r.string(n, `${this.kind} node`);
    if (!names.includes(name)) {
      const guess = closest(name, names);
      this.r.fail(n, `unknown node '${name}'`, guess ? `did you mean '${guess}'?` : `nodes are: ${names.join(', ')}`);
    }
    return name;
  }

  oscontainer(v: YamlValue | null, what: string): string {
    return this.r.target(node(v) ?? null, what, this.context.oscontainers);
  }

  pivotTarget(name: string): string | undefined {
    return this.context.nodes.find((n) => n.name === name)?.pivot;
  }

  follows(name: string): boolean {
    return this.context.nodes.find((n) => n.name === name)?.follow !== undefined;
  }

  cannotStageLater(name: string): string | undefined {
    const driver = this.context.nodes.find((n) => n.name === name)?.driver ?? 'legacy';
    const later = DRIVERS[driver].upgrade.later;
    return 'refused' in later ? `the ${driver} driver cannot stage for later: ${later.refused}` : undefined;
  }

  tagRef(v: YamlValue | null, what: string): string {
    const n = node(v) ?? null;
    const text = this.r.string(n, what);
    if (!parseTagRef(text)) this.r.fail(n, `${what} '${text}' is not REPO:TAG`, TAG_REF_HINT);
    return text;
  }

  bootTarget(v: YamlValue | null): string {
    const n = node(v) ?? null;
    const { images, oscontainers } = this.context;
    const text = this.r.string(n, 'booted');
    if (oscontainers.has(text) || images.has(text) || this.r.broken.has(text)) return text;
    // A pullspec names the oscontainer pulled from it (as a pivot target does).
    if (looksLikePullspec(text)) return this.r.target(n, 'booted', oscontainers);
    const fixture = /^fixture:(\S+)$/.exec(text);
    if (fixture) {
      images.set(text, { kind: 'fixture', version: this.r.fixtureVersion(n, fixture[1]!) });
      return text;
    }
    const guess = closest(text, [...oscontainers.keys(), ...images.keys()]);
    this.r.fail(n, `'${text}' is neither an oscontainer nor an image`, guess ? `did you mean '${guess}'?` : undefined);
  }
}
