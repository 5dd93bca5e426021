/**
 * `devpivot up --os-image PULLSPEC`: the installer's `osImageURLOverride` — the same scenario, with its nodes'
 * one pivot target replaced by a pullspec. The override is made on the scenario's text: every node `pivot:`
 * naming that target, and every step's `booted:` or `to:` naming it, is rewritten in place (comments, layout and
 * every other value stay as written), then the text is validated as any scenario is. The pullspec becomes an
 * implicit `pull:` oscontainer (`DocumentReader.target`).
 */
import { isMap, isScalar, isSeq, type Node, parseDocument, type Scalar } from 'yaml';
import { UsageError } from '../core/errors.js';
import { formatLocalSource, parseLocalSource, resolveLocalSource } from '../oci/local-source.js';
import { fullPullspecProblem } from './pullspec.js';

/** Keys of a step's body that name a pivot target or what was booted. */
const STEP_TARGET_KEYS = ['booted', 'to'];

/**
 * Check `--os-image` before anything starts: a full pullspec or a local image (oci/local-source.ts), else a usage
 * error (exit status 2).
 */
export function checkOsImage(pullspec: string): string {
  const problem = fullPullspecProblem(pullspec);
  if (problem) throw new UsageError(`--os-image: ${problem.message}`, problem.hint, 'BAD_REFERENCE');
  // A local path is the caller's, relative to where they are (the scenario file may be elsewhere).
  const local = parseLocalSource(pullspec);
  return local ? formatLocalSource(resolveLocalSource(local, process.cwd())) : pullspec;
}

/**
 * The scenario text with its pivot target replaced by `pullspec`. The nodes that pivot must share one target
 * (the default scenario has one node and one target); otherwise there is nothing unambiguous to override.
 */
export function overrideOsImage(text: string, file: string, pullspec: string): string {
  const doc = parseDocument(text);
  // A file with errors is left as it is: validating it reports them at their positions.
  if (doc.errors.length > 0 || !isMap(doc.contents)) return text;
  const nodes = doc.contents.get('nodes', true) as Node | undefined;
  const pivots: Scalar[] = [];
  if (isMap(nodes))
    for (const pair of nodes.items) {
      const pivot = isMap(pair.value) ? (pair.value.get('pivot', true) as Node | undefined) : undefined;
      if (isScalar(pivot) && typeof pivot.value === 'string') pivots.push(pivot);
    }
  const targets = new Set(pivots.map((scalar) => scalar.value as string));
  if (targets.size !== 1)
    throw new UsageError(
      `--os-image overrides the one pivot target of a scenario's nodes; ${file} has ${targets.size === 0 ? 'none' : `${targets.size}: ${[...targets].join(', ')}`}`,
      "run the default scenario (devpivot up --os-image PULLSPEC), or write the pullspec as the nodes' pivot: in the file",
    );
  const [target] = targets;
  const replace: Scalar[] = [...pivots];
  const steps = doc.contents.get('steps', true) as Node | undefined;
  if (isSeq(steps))
    for (const item of steps.items) {
      const body = isMap(item) && item.items.length === 1 ? item.items[0]!.value : undefined;
      if (!isMap(body)) continue;
      for (const key of STEP_TARGET_KEYS) {
        const value = body.get(key, true) as Node | undefined;
        if (isScalar(value) && value.value === target) replace.push(value);
      }
    }
  // Spliced from the end, so the earlier ranges stay right; a JSON string is a valid YAML scalar anywhere.
  let out = text;
  for (const scalar of replace.sort((a, b) => b.range![0] - a.range![0]))
    out = `${out.slice(0, scalar.range![0])}${JSON.stringify(pullspec)}${out.slice(scalar.range![1])}`;
  return out;
}
