/**
 * Reading a scenario file: YAML with positions, then the sections in order (images, oscontainers, registry,
 * nodes, steps). Every problem is collected with its `file:line:col` before anything runs.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import { isScalar, LineCounter, type Node, type Pair, parseDocument } from 'yaml';
import { DevpivotError, ExitCode } from '../core/errors.js';
import type { Position } from '../steps/reader.js';
import { DEFAULT_TIMEOUT_MS, defaultSteps } from './defaults.js';
import { ScenarioError, type ScenarioIssue } from './error.js';
import { readImages } from './images-section.js';
import { readNodes } from './nodes-section.js';
import { readOscontainers } from './oscontainers-section.js';
import { DocumentReader, nodeOffset } from './reader.js';
import { readRegistry } from './registry-section.js';
import { readSteps } from './steps-section.js';
import type { ImageSource, OscontainerSource, RegistrySpec, Scenario } from './types.js';

export { ScenarioError, type ScenarioIssue } from './error.js';

const TOP_KEYS = ['name', 'description', 'timeout', 'images', 'oscontainers', 'registry', 'nodes', 'steps'];

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
  const reader = new DocumentReader(at, issues, dirname(resolve(file)));
  const scenario = reader.guard(() => readScenario(reader, doc.contents, file));
  if (issues.length > 0 || !scenario)
    throw new ScenarioError(
      file,
      issues.sort((a, b) => a.line - b.line || a.col - b.col),
    );
  return scenario;
}

function readScenario(r: DocumentReader, root: Node | null, file: string): Scenario | undefined {
  if (root === null || (isScalar(root) && root.value === null))
    r.fail(root, 'the scenario is empty', "a minimal scenario has 'nodes:' with one node");
  const top = r.fields(root, 'the scenario', TOP_KEYS);
  const images = new Map<string, ImageSource>();
  const oscontainers = new Map<string, OscontainerSource>();
  const get = (key: string) => top.get(key)?.value ?? null;
  const name = top.has('name') ? (r.guard(() => r.string(get('name'), 'name')) ?? '') : basename(file, extname(file));
  const description = top.has('description') ? r.guard(() => r.string(get('description'), 'description')) : undefined;
  const timeoutMs = top.has('timeout')
    ? (r.guard(() => r.duration(get('timeout'), 'timeout')) ?? DEFAULT_TIMEOUT_MS)
    : DEFAULT_TIMEOUT_MS;
  if (top.has('images')) r.guard(() => readImages(r, get('images'), images));
  if (top.has('oscontainers')) r.guard(() => readOscontainers(r, get('oscontainers'), oscontainers));
  const registry: RegistrySpec = top.has('registry')
    ? (r.guard(() => readRegistry(r, get('registry'))) ?? { kind: 'embedded' })
    : { kind: 'embedded' };
  if (!top.has('nodes')) r.fail(root, "the scenario needs 'nodes:' (at least one node)");
  const nodes = readNodes(r, get('nodes'), images, oscontainers);
  const steps = top.has('steps') ? readSteps(r, get('steps'), { nodes, images, oscontainers }) : defaultSteps(nodes);
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
