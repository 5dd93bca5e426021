/**
 * A node's `ignition:` fragment, checked before anything runs: its spec version against what devpivot writes
 * (`chooseSpec`), spec 2.2.0 against the rules devpivot knows (`validateSpec2`), and spec 3 with the real
 * `ignition-validate`. Every message is mapped back to the YAML value it is about: the validator names a JSON path
 * (`$.storage.files.0.path`) or an offset in the JSON text devpivot gave it, and both lead to a node of the
 * fragment's YAML.
 */
import { isMap, isScalar, isSeq, type Node, type YAMLMap } from 'yaml';
import { chooseSpec } from '../ignition/generate.js';
import { SPEC_VERSIONS, type SpecVersion } from '../ignition/spec.js';
import { validateSpec2 } from '../ignition/validate.js';
import type { ScenarioEnvironment } from './environment.js';
import type { ScenarioIssue } from './error.js';
import type { DocumentReader } from './reader.js';

/**
 * What a fragment is read as: the node's `ignition-spec:` when written (the fragment must fit it), and the version
 * a fragment without `ignition.version` is merged as (the node's spec; engine/real-deps.ts does the same).
 */
export interface FragmentSpec {
  explicit?: SpecVersion;
  unwritten: SpecVersion;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Path = readonly (string | number)[];

/** An Ignition check that needs the validator: run after the document is read, with its issues' positions. */
export type DeferredCheck = (env: ScenarioEnvironment) => Promise<ScenarioIssue[]>;

/**
 * Read the fragment (a mapping) and check what can be checked now; spec 3 configs get a deferred check. Returns
 * the fragment as written and its `ignition.version` if written (without one the engine merges it as the node's
 * spec, `spec.unwritten`).
 */
export function readIgnitionFragment(
  r: DocumentReader,
  value: Node | null,
  what: string,
  deferred: DeferredCheck[],
  spec: FragmentSpec,
): { fragment: Record<string, unknown>; version: string | undefined } {
  const map = r.map(value, what) as YAMLMap;
  const fragment = map.toJSON() as Record<string, Json>;
  const ignition = fragment.ignition;
  if (ignition !== undefined && (typeof ignition !== 'object' || ignition === null || Array.isArray(ignition)))
    r.fail(nodeAt(map, ['ignition']), `${what}.ignition must be a mapping`);
  const written = (ignition as { version?: Json } | undefined)?.version;
  if (written !== undefined && typeof written !== 'string')
    r.fail(nodeAt(map, ['ignition', 'version']), `${what} ignition.version must be a string like '3.3.0'`);
  const version = written ?? spec.unwritten;
  const config = { ...fragment, ignition: { ...((ignition as object) ?? {}), version } };
  try {
    chooseSpec(spec.explicit, config);
  } catch (error) {
    r.fail(
      nodeAt(map, ['ignition', 'version']),
      `${what}: ${(error as Error).message}`,
      spec.explicit
        ? `write a ${spec.explicit.split('.')[0]}.x version not newer than ignition-spec ${spec.explicit}, or leave ignition.version out`
        : `write one of ${SPEC_VERSIONS.join(', ')}, or leave ignition.version out (${spec.unwritten})`,
    );
  }
  if (version.startsWith('2.')) {
    const problems = validateSpec2(config);
    for (const problem of problems) {
      const [path = '', message = problem] = problem.split(/: (.*)/s);
      r.guard(() => r.fail(nodeAt(map, dottedPath(path)), `${what} is not valid Ignition 2.2.0: ${path}: ${message}`));
    }
    return { fragment, version: written };
  }
  deferred.push(async (env) => {
    if (!env.validateIgnition) return [];
    const { text, spans } = serialize(config);
    const result = await env.validateIgnition(JSON.parse(text) as object);
    if (!result.checked) return [];
    return validatorIssues(result.output, spans).map(({ path, message }) => ({
      // An unused key is about the key itself, anything else about the value.
      ...r.at(nodeAt(map, path, /unused key/i.test(message))),
      message: `${what} is not valid Ignition ${version} (ignition-validate): ${message}`,
    }));
  });
  return { fragment, version: written };
}

/** `error at $.storage.files.0.path, line 1 col 61: path not absolute` → the path and the message. */
export function validatorIssues(output: string, spans: Span[]): { path: Path; message: string }[] {
  const out: { path: Path; message: string }[] = [];
  for (const line of output.split('\n')) {
    const match = /^(error|warning) at (?:(\$[^,]*), )?line (\d+) col (\d+): (.*)$/.exec(line.trim());
    if (!match) {
      if (/^error|couldn't parse/i.test(line.trim())) out.push({ path: [], message: line.trim() });
      continue;
    }
    const [, level, jsonPath, , col, message] = match;
    // Warnings are about keys Ignition ignores (a misspelt key): as much a mistake in a fragment as an error.
    if (level === 'warning' && !/unused key/i.test(message!)) continue;
    const path = jsonPath ? dottedPath(jsonPath.replace(/^\$\.?/, '')) : spanAt(spans, Number(col) - 1);
    out.push({ path, message: message! });
  }
  return out;
}

/** `storage.files[0].path` or `storage.files.0.path` as path segments. */
export function dottedPath(text: string): Path {
  return text
    .replace(/\[(\d+)\]/g, '.$1')
    .split('.')
    .filter((part) => part !== '' && part !== 'config')
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

/** The YAML node at `path` inside `root` (its key with `key`), or the deepest one that exists on the way. */
export function nodeAt(root: Node, path: Path, key = false): Node {
  let node: Node = root;
  for (const [i, segment] of path.entries()) {
    let next: Node | null | undefined;
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === String(segment));
      const last = i === path.length - 1;
      next =
        key && last
          ? (pair?.key as Node | undefined)
          : ((pair?.value as Node | null | undefined) ?? (pair?.key as Node | undefined));
    } else if (isSeq(node) && typeof segment === 'number') next = node.items[segment] as Node | undefined;
    if (!next) return node;
    node = next;
  }
  return node;
}

/** Where each value of the serialized JSON starts and ends, by path. */
export interface Span {
  start: number;
  end: number;
  path: Path;
}

/** JSON text on one line (as ignition-validate reads it), with the span of every value. */
export function serialize(value: Json | object): { text: string; spans: Span[] } {
  const spans: Span[] = [];
  let text = '';
  const write = (v: Json, path: Path) => {
    const start = text.length;
    if (Array.isArray(v)) {
      text += '[';
      v.forEach((item, i) => {
        if (i > 0) text += ',';
        write(item, [...path, i]);
      });
      text += ']';
    } else if (v !== null && typeof v === 'object') {
      text += '{';
      Object.entries(v).forEach(([key, item], i) => {
        if (i > 0) text += ',';
        text += `${JSON.stringify(key)}:`;
        write(item, [...path, key]);
      });
      text += '}';
    } else text += JSON.stringify(v) ?? 'null';
    spans.push({ start, end: text.length, path });
  };
  write(value as Json, []);
  return { text, spans };
}

/** The innermost value containing `offset`. */
function spanAt(spans: Span[], offset: number): Path {
  let best: Span | undefined;
  for (const span of spans) {
    if (span.start <= offset && offset <= span.end && (!best || span.end - span.start < best.end - best.start))
      best = span;
  }
  return best?.path ?? [];
}
