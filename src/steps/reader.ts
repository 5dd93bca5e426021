/**
 * What a step's parse sees of the scenario document: a position-aware reader over its YAML body. `src/scenario/`
 * implements it; steps never look inside a value themselves, so every issue keeps the `line:col` of the value it
 * is about, with the same messages for every step.
 */

/** A position in a scenario file (1-based), for error messages and step labels. */
export interface Position {
  line: number;
  col: number;
}

declare const opaque: unique symbol;
/** A value of the document (a scalar, a list, a mapping, or a key), opaque to steps: pass it back to the reader. */
export interface YamlValue {
  readonly [opaque]: 'YamlValue';
}

/** One key of a mapping: the key (for issues about the key itself) and its value. */
export interface Field {
  readonly key: YamlValue;
  readonly value: YamlValue | null;
}

export type Fields = ReadonlyMap<string, Field>;

/** Where a step is written: `- kind` or `- kind: body`. */
export interface StepSource {
  /** Its body; null for the bare form `- up`. */
  readonly body: YamlValue | null;
  /** The kind as written (the scalar, or the mapping's one key): issues about the whole step point here. */
  readonly key: YamlValue;
  /** Where the list item starts: the step's `pos`. */
  readonly pos: Position;
}

/**
 * Reading one step. Every method that checks a value either returns it or abandons the step with an issue at the
 * value's position (`what` names the value in the message); the document reader records the issue and goes on with
 * the next step. One reader per step: `node` knows the step's kind and key for its messages.
 */
export interface StepReader {
  /** Abandon this step with an issue at the position of `at`. */
  fail(at: YamlValue | null, message: string, hint?: string): never;
  /**
   * The keys of a mapping, checked against `allowed` (an unknown key is an issue with "did you mean", recorded
   * without abandoning the step), then `required`.
   */
  fields(value: YamlValue | null, what: string, allowed: readonly string[], required?: readonly string[]): Fields;
  isScalar(value: YamlValue | null | undefined): value is YamlValue;
  /** The items of a list, or undefined when the value is not a list. */
  listItems(value: YamlValue | null): readonly YamlValue[] | undefined;
  /** A scalar's value as text (`null` for an empty one), or undefined when the value is not a scalar. */
  scalarText(value: YamlValue | null | undefined): string | undefined;
  string(value: YamlValue | null, what: string): string;
  oneOf<T extends string>(value: YamlValue | null, what: string, choices: readonly T[]): T;
  /**
   * Milliseconds, from `90s`, `5m`, `1m30s` or a bare number of seconds: at least `min` (default 1 ms) and at
   * most the scenario's `timeout` (a step that waits longer could never finish in time).
   */
  duration(value: YamlValue | null, what: string, options?: { min?: number }): number;
  integer(value: YamlValue | null, what: string, min: number, max: number): number;
  boolean(value: YamlValue | null, what: string): boolean;
  /** A string that compiles as a JavaScript regular expression. */
  regex(value: YamlValue | null, what: string): string;
  /** A list of strings; a single string is a list of one. */
  stringList(value: YamlValue | null, what: string): string[];
  /** `text` as a value at `from`'s position, to check a rewritten value (`staged` for `pivot.staged`) in place. */
  rewritten(text: string, from: YamlValue | null | undefined): YamlValue;
  /** The scenario's node names, in file order. */
  readonly nodes: readonly string[];
  /** Which registry the scenario uses: faults only act on the embedded one. */
  readonly registry: 'embedded' | 'external';
  /**
   * A node name. Absent (undefined or null): the only node, or an issue at `owner` (or the step's key) when there
   * are several. An unknown name is an issue with "did you mean".
   */
  node(value: YamlValue | null | undefined, owner: YamlValue | null): string;
  /**
   * An oscontainer name; `fixture:N` defines a build of fixture version N, and a full pullspec
   * (`HOST[:PORT]/REPO@sha256:…`) a pull of it (as a node's `pivot:` does).
   */
  oscontainer(value: YamlValue | null, what: string): string;
  /** A node's `pivot:` target (an oscontainer name), if it has one. */
  pivotTarget(node: string): string | undefined;
  /** Whether a node follows a tag (`follow:`). */
  follows(node: string): boolean;
  /**
   * Why a node's driver cannot stage an update now and apply it later (`upgrade: { download-only }`, `finalize`),
   * or undefined when it can (src/drivers/staged-later.ts).
   */
  cannotStageLater(node: string): string | undefined;
  /** `REPO:TAG`, a repository and tag of the embedded registry. */
  tagRef(value: YamlValue | null, what: string): string;
  /**
   * What a node may have booted: an oscontainer or image name, `fixture:N` (which defines that image
   * implicitly) or a full pullspec (the oscontainer pulled from it). Anything else is an issue with "did you mean".
   */
  bootTarget(value: YamlValue | null): string;
}
