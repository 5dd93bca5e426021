/**
 * The position-aware reader of a scenario document: every value is checked where it is written, and a value that
 * does not fit is an issue with that value's `line:col` (and "did you mean" where a typo is likely). The sections
 * (`*-section.ts`) are written with it; steps get it through the `StepReader` of `steps-section.ts`.
 */
import { isAbsolute, resolve } from 'node:path';
import { isMap, isScalar, isSeq, type Node, type Pair, Scalar, type YAMLMap } from 'yaml';
import { MAX_ID_LENGTH, validName } from '../core/names.js';
import { closest } from '../core/suggest.js';
import { formatLocalSource, parseLocalSource, resolveLocalSource } from '../oci/local-source.js';
import type { Position } from '../steps/reader.js';
import { formatDuration, MAX_TIMER_MS, parseDuration } from '../steps/units.js';
import type { ScenarioEnvironment } from './environment.js';
import { Issue, type ScenarioIssue } from './error.js';
import { fullPullspecProblem, looksLikePullspec } from './pullspec.js';
import type { OscontainerSource } from './types.js';

/** The keys of one mapping, by name: the key node (for issues about the key) and its value. */
export type MappingFields = Map<string, { key: Node; value: Node | null }>;

/** Names of images and oscontainers (they become registry repository names). */
const NAME = /^[a-z][a-z0-9-]{0,30}$/;
/** Characters no value may hold: they would end a line or a string in a guest file (NUL, other C0 controls). */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

export class DocumentReader {
  constructor(
    readonly at: (node: Node | Pair | null | undefined) => Position,
    readonly issues: ScenarioIssue[],
    readonly baseDir: string,
    readonly env: ScenarioEnvironment,
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
  fields(node: Node | null, what: string, allowed: readonly string[], required: readonly string[] = []): MappingFields {
    const map = this.map(node, what);
    const out: MappingFields = new Map();
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
      out.set(name, { key, value: pair.value });
    }
    for (const name of required) {
      if (!out.has(name)) this.fail(node, `${what} needs '${name}'`);
    }
    return out;
  }

  /** A scalar as text: one line without control characters, unless `multiline` (then newlines are allowed). */
  string(node: Node | null, what: string, options: { multiline?: boolean } = {}): string {
    if (!isScalar(node) || (typeof node.value !== 'string' && typeof node.value !== 'number'))
      this.fail(node, `${what} must be a string, got ${describe(node)}`);
    // A plain scalar that YAML reads as a number (a checksum of digits, `1.10`) is meant as written.
    const { value, source } = node as { value: unknown; source?: unknown };
    const text = typeof value === 'number' && typeof source === 'string' ? source : String(value);
    if (CONTROL.test(text) || (!options.multiline && /[\r\n]/.test(text)))
      this.fail(
        node,
        `${what} holds a ${/\u0000/.test(text) ? 'NUL' : /[\r\n]/.test(text) ? 'line break' : 'control character'}: ${quote(text)}`,
        options.multiline ? 'printable text only' : 'one line of printable text',
      );
    return text;
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

  /**
   * Milliseconds, from at least `min` (default 1 ms: a deadline of 0 can never be met) to at most `max` (default
   * the longest timer Node can set, 2^31-1 ms, about 24.8 days).
   */
  duration(node: Node | null, what: string, options: { min?: number; max?: number; maxWhy?: string } = {}): number {
    const raw = isScalar(node) ? node.value : undefined;
    const ms = typeof raw === 'string' || typeof raw === 'number' ? parseDuration(raw) : undefined;
    if (ms === undefined) this.fail(node, `${what} must be a duration like 90s, 5m or 1m30s; got ${describe(node)}`);
    const min = options.min ?? 1;
    if (ms < min)
      this.fail(node, `${what} must be at least ${formatDuration(min)}; got ${describe(node)}`, 'a positive duration');
    if (ms > MAX_TIMER_MS)
      this.fail(node, `${what} is longer than a timer can run; got ${describe(node)}`, 'at most 24d (2^31-1 ms)');
    if (options.max !== undefined && ms > options.max)
      this.fail(
        node,
        `${what} of ${formatDuration(ms)} is longer than ${options.maxWhy ?? formatDuration(options.max)}`,
        `at most ${formatDuration(options.max)}, or raise it`,
      );
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

  regex(node: Node | null, what: string): string {
    const text = this.string(node, what);
    try {
      new RegExp(text);
    } catch (error) {
      this.fail(node, `${what} is not a valid regular expression: ${(error as Error).message}`);
    }
    return text;
  }

  /** A path as written, resolved against the scenario file's directory. */
  path(value: string): string {
    return isAbsolute(value) ? value : resolve(this.baseDir, value);
  }

  /** The name of an image or oscontainer. */
  name(key: Node, what: string): string {
    const name = this.string(key, what);
    if (!NAME.test(name))
      this.fail(key, `${what} '${name}' must be lowercase letters, digits and '-', starting with a letter (max 31)`);
    return name;
  }

  /** A node name: the VM layer's rule (core/names.ts), since it becomes part of the domain name. */
  nodeName(key: Node): string {
    const name = this.string(key, 'node name');
    if (!validName(name))
      this.fail(
        key,
        `node name '${name}' is not valid`,
        `lowercase letters, digits and single dashes, not at either end, at most ${MAX_ID_LENGTH} characters`,
      );
    return name;
  }

  /** `N` of `fixture:N`: a version the fixture's recipe builds. */
  fixtureVersion(node: Node | null, version: string): string {
    const { versions } = this.env.fixture;
    if (!versions.includes(version))
      this.fail(
        node,
        `the fixture OS has no version '${version}'`,
        `its versions are ${versions.map((v) => `fixture:${v}`).join(', ')}`,
      );
    return version;
  }

  /**
   * A pivot target: an oscontainer name; `fixture:N`, a build of that fixture version; or a full pullspec
   * (`HOST[:PORT]/REPO[:TAG]` or `…@sha256:…`), a pull into the scenario's registry, as `pull:` does. Both are
   * defined implicitly, named as written (a pullspec target's repository: engine/prepare.ts `repositoryName`).
   */
  target(node: Node | null, what: string, oscontainers: Map<string, OscontainerSource>): string {
    const text = this.string(node, what);
    if (oscontainers.has(text) || this.broken.has(text) || !looksLikePullspec(text))
      return this.ref(node, what, oscontainers, (version) => ({ kind: 'build-fixture', version }));
    const problem = fullPullspecProblem(text);
    if (problem) this.fail(node, `${what}: ${problem.message}`, problem.hint);
    oscontainers.set(text, { kind: 'pull', ref: this.localSource(node, what, text) ?? text });
    return text;
  }

  /**
   * A local image source (`containers-storage:`, `oci-archive:`, `oci:`), its path made absolute against the
   * scenario's directory and checked now; undefined when `text` names a registry image.
   */
  localSource(node: Node | null, what: string, text: string): string | undefined {
    const parsed = parseLocalSource(text);
    if (!parsed) return undefined;
    const source = resolveLocalSource(parsed, this.baseDir);
    const problem = this.env.localImageProblem?.(source);
    if (problem) this.fail(node, `${what}: ${problem.message}`, problem.hint);
    return formatLocalSource(source);
  }

  /** `fixture:N` used directly as a reference registers an implicit image / oscontainer of that name. */
  ref(node: Node | null, what: string, known: Map<string, unknown>, implicit: (version: string) => unknown): string {
    const text = this.string(node, what);
    if (known.has(text) || this.broken.has(text)) return text;
    const fixture = /^fixture:(\S+)$/.exec(text);
    if (fixture) {
      known.set(text, implicit(this.fixtureVersion(node, fixture[1]!)));
      return text;
    }
    const guess = closest(text, known.keys());
    this.fail(
      node,
      `${what} '${text}' is not defined`,
      guess
        ? `did you mean '${guess}'?`
        : what.includes('image')
          ? 'define it under images: or use fixture:N'
          : 'define it under oscontainers:, or write fixture:N or a pullspec HOST[:PORT]/REPO@sha256:…',
    );
  }
}

/** A synthetic scalar carrying another node's position, so errors still point at the source. */
export function scalarLike(value: string, from?: Node | null): Node {
  const scalar = new Scalar(value);
  scalar.range = from?.range ?? [0, 0, 0];
  return scalar;
}

/** What a value is, for "must be X, got Y". */
export function describe(node: Node | null | undefined): string {
  if (node === null || node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) return node.value === null ? 'nothing' : `${typeof node.value} ${quote(String(node.value))}`;
  return 'something else';
}

/** A value in a message: quoted, control characters escaped, long values cut. */
export function quote(text: string): string {
  const short = text.length > 60 ? `${text.slice(0, 57)}...` : text;
  return `'${short.replace(/[\u0000-\u001f\u007f]/g, (c) => (c === '\n' ? '\\n' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`))}'`;
}

/** Where a node (or a pair: its key) starts in the text. */
export function nodeOffset(node: Node | Pair | null | undefined): number {
  if (!node) return 0;
  if ('range' in node && node.range) return node.range[0];
  if ('key' in node) return nodeOffset(node.key as Node) || nodeOffset(node.value as Node);
  return 0;
}
