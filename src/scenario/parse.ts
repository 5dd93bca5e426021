/**
 * Reading a scenario file: YAML with positions, then the sections in order (images, oscontainers, registry,
 * nodes, steps), then the checks that need a program (ignition-validate). Every problem of every file is
 * collected with its `file:line:col` before anything runs.
 */

import { readFile } from 'node:fs/promises';
import { basename, dirname, extname, resolve } from 'node:path';
import { isScalar, LineCounter, type Node, type Pair, parseDocument } from 'yaml';
import { DevpivotError, ExitCode } from '../core/errors.js';
import type { Firmware } from '../core/firmware.js';
import type { Position } from '../steps/reader.js';
import { DEFAULT_TIMEOUT_MS, defaultSteps } from './defaults.js';
import { localEnvironment, type ScenarioEnvironment } from './environment.js';
import { ScenarioError, type ScenarioIssue } from './error.js';
import type { DeferredCheck } from './ignition-fragment.js';
import { readImages } from './images-section.js';
import { readNodes } from './nodes-section.js';
import { readOscontainers } from './oscontainers-section.js';
import { DocumentReader, nodeOffset } from './reader.js';
import { readRegistry } from './registry-section.js';
import { readSteps } from './steps-section.js';
import type { ImageSource, OscontainerSource, RegistrySpec, Scenario } from './types.js';

export { ScenarioError, type ScenarioIssue } from './error.js';

const TOP_KEYS = ['name', 'description', 'timeout', 'images', 'oscontainers', 'registry', 'nodes', 'steps'];

/**
 * How a file's text is read: `rewrite` changes it before validation (`devpivot up --os-image`, os-image.ts);
 * `firmware` replaces every node's firmware once it is valid (`devpivot up --firmware`, checked by the caller).
 */
export interface LoadOptions {
  rewrite?: (text: string, file: string) => string;
  firmware?: Firmware;
}

/**
 * Read and validate a scenario file, including the checks that run a program (Ignition fragments through
 * ignition-validate). Relative paths inside it are resolved against its directory.
 */
export async function loadScenario(
  file: string,
  env: ScenarioEnvironment = localEnvironment(),
  options: LoadOptions = {},
): Promise<Scenario> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new DevpivotError('SCENARIO_NOT_FOUND', `cannot read scenario ${file}: ${(error as Error).message}`, {
      hint: 'pass a path to a .yaml scenario, e.g. scenarios/old-to-new.yaml',
      exitCode: ExitCode.usage,
      cause: error,
    });
  }
  const scenario = await validateScenario(options.rewrite ? options.rewrite(text, file) : text, file, env);
  const firmware = options.firmware;
  return firmware ? { ...scenario, nodes: scenario.nodes.map((node) => ({ ...node, firmware })) } : scenario;
}

/**
 * Every file, validated: the scenarios in order, or one error listing every problem of every file (exit status
 * 2) — nothing of a run starts before all of them are valid.
 */
export async function loadScenarios(
  files: string[],
  env: ScenarioEnvironment,
  options: LoadOptions = {},
): Promise<Scenario[]> {
  const results = await Promise.allSettled(files.map((file) => loadScenario(file, env, options)));
  const errors = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
  if (errors.length === 0) return results.map((result) => (result as PromiseFulfilledResult<Scenario>).value);
  const bug = errors.find((error) => !(error instanceof DevpivotError));
  if (bug) throw bug;
  if (errors.length === 1) throw errors[0];
  const problems = (errors as DevpivotError[]).reduce(
    (sum, error) => sum + (error instanceof ScenarioError ? error.issues.length : 1),
    0,
  );
  throw new DevpivotError(
    'SCENARIO_INVALID',
    `${problems} problem(s) in ${errors.length} of ${files.length} scenario files:\n${(errors as DevpivotError[])
      .map((error) => (error instanceof ScenarioError ? error.lines.join('\n') : error.message))
      .join('\n')}`,
    { hint: 'see scenarios/README.md for the schema', exitCode: ExitCode.usage },
  );
}

/** Validate scenario text, with every check (`loadScenario` without reading the file). */
export async function validateScenario(
  text: string,
  file: string,
  env: ScenarioEnvironment = localEnvironment(),
): Promise<Scenario> {
  const { scenario, issues, deferred } = readDocument(text, file, env);
  const later = await Promise.all(deferred.map((check) => check(env)));
  issues.push(...later.flat());
  if (issues.length > 0 || !scenario) throw new ScenarioError(file, sorted(issues));
  return scenario;
}

/**
 * Validate scenario text without the checks that run a program. `file` names it in messages and anchors
 * relative paths.
 */
export function parseScenario(text: string, file: string, env: ScenarioEnvironment = localEnvironment()): Scenario {
  const { scenario, issues } = readDocument(text, file, env);
  if (issues.length > 0 || !scenario) throw new ScenarioError(file, sorted(issues));
  return scenario;
}

function sorted(issues: ScenarioIssue[]): ScenarioIssue[] {
  return issues.sort((a, b) => a.line - b.line || a.col - b.col);
}

function readDocument(
  text: string,
  file: string,
  env: ScenarioEnvironment,
): { scenario: Scenario | undefined; issues: ScenarioIssue[]; deferred: DeferredCheck[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const issues: ScenarioIssue[] = [];
  const deferred: DeferredCheck[] = [];
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
    return { scenario: undefined, issues, deferred: [] };
  }
  const reader = new DocumentReader(at, issues, dirname(resolve(file)), env);
  const scenario = reader.guard(() => readScenario(reader, doc.contents, file, deferred));
  return { scenario, issues, deferred };
}

function readScenario(r: DocumentReader, root: Node | null, file: string, deferred: DeferredCheck[]): Scenario {
  if (root === null || (isScalar(root) && root.value === null))
    r.fail(root, 'the scenario is empty', "a minimal scenario has 'nodes:' with one node");
  const top = r.fields(root, 'the scenario', TOP_KEYS);
  const images = new Map<string, ImageSource>();
  const oscontainers = new Map<string, OscontainerSource>();
  const get = (key: string) => top.get(key)?.value ?? null;
  const name = top.has('name') ? (r.guard(() => r.string(get('name'), 'name')) ?? '') : basename(file, extname(file));
  const description = top.has('description')
    ? r.guard(() => r.string(get('description'), 'description', { multiline: true }))
    : undefined;
  const timeoutMs = top.has('timeout')
    ? (r.guard(() => r.duration(get('timeout'), 'timeout')) ?? DEFAULT_TIMEOUT_MS)
    : DEFAULT_TIMEOUT_MS;
  if (top.has('images')) r.guard(() => readImages(r, get('images'), images));
  // The registry first: `prefetch: false` in oscontainers needs its mirror and upstream (undefined when broken).
  const issuesBefore = r.issues.length;
  const registry: RegistrySpec = top.has('registry')
    ? (r.guard(() => readRegistry(r, get('registry'))) ?? { kind: 'embedded' })
    : { kind: 'embedded' };
  const registryKnown = r.issues.length === issuesBefore;
  if (top.has('oscontainers'))
    r.guard(() => readOscontainers(r, get('oscontainers'), oscontainers, registryKnown ? registry : undefined));
  if (!top.has('nodes')) r.fail(root, "the scenario needs 'nodes:' (at least one node)");
  const nodes = readNodes(r, get('nodes'), {
    images,
    oscontainers,
    deferred,
    ...(registryKnown ? { registry } : {}),
  });
  const steps = top.has('steps')
    ? readSteps(r, get('steps'), { nodes, images, oscontainers, timeoutMs, registry: registry.kind })
    : defaultSteps(nodes);
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
