import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import test from 'ava';
import { repoRoot } from './helpers/cli.js';

const src = join(repoRoot, 'src');

/**
 * The layers of docs/ARCHITECTURE.md "## Layers", as an allow-list (go-containerregistry's
 * pkg/registry/depcheck_test.go): each top-level folder of src/ names the folders it may import, type-only
 * imports included. A folder missing here fails the test, so a new layer has to say where it sits. `core`
 * imports nothing of ours; nothing below the engine imports tui, report or cli; `cli` wires everything.
 */
const ANYTHING = '*';
const ALLOWED: Record<string, readonly string[] | typeof ANYTHING> = {
  core: [],
  oci: ['core'],
  registry: ['core', 'oci'],
  oscontainer: ['core', 'oci'],
  // Pivot drivers: one file each (formats, specs, kernel arguments, fragment, second request); no engine.
  drivers: ['core', 'oci', 'ignition'],
  ignition: ['core', 'oci', 'drivers'],
  fixture: ['core'],
  vm: ['core'],
  // Step kinds: their schema, parse and run over a small runtime interface; scenario and engine import them.
  steps: ['core', 'registry'],
  scenario: ['core', 'steps', 'ignition', 'oci', 'drivers'],
  engine: ['core', 'oci', 'steps', 'scenario', 'registry', 'oscontainer', 'ignition', 'drivers', 'fixture', 'vm'],
  doctor: ['core', 'vm', 'fixture'],
  report: ['core', 'engine', 'scenario'],
  tui: ['core', 'report', 'engine', 'scenario'],
  cli: ANYTHING,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Every module specifier: static imports and re-exports (type-only too), side-effect and dynamic imports. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((match) => match[1]!);
}

/** The top-level folder of src/ a path lies in ('' for a file directly in src/). */
function layerOf(path: string): string {
  const parts = relative(src, path).split(sep);
  return parts.length > 1 ? parts[0]! : '';
}

const repoPath = (file: string) => relative(repoRoot, file).split(sep).join('/');

test('every folder of src/ imports only the folders its entry in the allow-list names', (t) => {
  const offences: string[] = [];
  for (const file of sourceFiles(src)) {
    const from = layerOf(file);
    const allowed = ALLOWED[from];
    if (allowed === undefined) {
      offences.push(`${repoPath(file)}: src/${from || '.'} has no entry in the allow-list`);
      continue;
    }
    if (allowed === ANYTHING) continue;
    for (const target of imports(file)) {
      if (!target.startsWith('.')) continue;
      const to = layerOf(join(file, '..', target));
      if (to !== from && !allowed.includes(to))
        offences.push(`${repoPath(file)} imports ${target}: ${from} may import only [${allowed.join(', ')}]`);
    }
  }
  t.deepEqual(offences, []);
});

/** Files (or folders, ending in /) of src/ that must not import a path under the listed prefixes. */
const FORBIDDEN: ReadonlyArray<{ from: string; never: string; why: string }> = [
  { from: 'src/vm/host.ts', never: 'src/vm/libvirt/', why: 'the host contract knows no implementation' },
  { from: 'src/vm/index.ts', never: 'src/vm/libvirt/', why: 'the public contract; libvirt is one implementation' },
  { from: 'src/registry/handlers/', never: 'src/registry/server.ts', why: 'handlers serve requests, not the server' },
  { from: 'src/drivers/', never: 'src/engine/', why: 'a driver is facts and text, run by the engine' },
];

function resolveImport(file: string, target: string): string | undefined {
  const base = join(file, '..', target).replace(/\.js$/, '');
  for (const candidate of [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts')])
    if (files.has(candidate)) return candidate;
  return undefined;
}
const files = new Set(sourceFiles(src));

test('sub-folders that carry contracts import nothing they must not', (t) => {
  const offences: string[] = [];
  for (const file of files) {
    const from = repoPath(file);
    for (const rule of FORBIDDEN.filter((r) => (r.from.endsWith('/') ? from.startsWith(r.from) : from === r.from)))
      for (const target of imports(file)) {
        const to = target.startsWith('.') ? resolveImport(file, target) : undefined;
        if (to && repoPath(to).startsWith(rule.never)) offences.push(`${from} imports ${target}: ${rule.why}`);
      }
  }
  t.deepEqual(offences, []);
});

/** The import circles among src/ files (type-only imports included), each as the files around it. */
function cycles(): string[][] {
  const graph = new Map<string, string[]>();
  for (const file of files)
    graph.set(
      file,
      imports(file)
        .filter((target) => target.startsWith('.'))
        .flatMap((target) => resolveImport(file, target) ?? []),
    );
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(stack.slice(stack.indexOf(next)).map(repoPath));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

test('no import circle among src/ files', (t) => {
  t.deepEqual(cycles(), []);
});

test('only src/vm/libvirt/ffi.ts imports koffi', (t) => {
  const importers = sourceFiles(src)
    .filter((file) => imports(file).includes('koffi'))
    .map(repoPath);
  t.true(
    importers.every((file) => file === 'src/vm/libvirt/ffi.ts'),
    importers.join(', '),
  );
});

test('only src/tui imports the UI packages (ink, react)', (t) => {
  const importers = sourceFiles(src)
    .filter((file) => imports(file).some((target) => target === 'ink' || target === 'react'))
    .map(repoPath)
    .filter((file) => !file.startsWith('src/tui/'));
  t.deepEqual(importers, []);
});

test('the import scanner sees static, type-only, re-exported and dynamic imports (guards the tests above)', (t) => {
  t.true(imports(join(src, 'cli', 'main.ts')).includes('./verbs.js'));
  t.true(imports(join(src, 'cli', 'commands', 'up.ts')).includes('../../tui/presenter.js'), 'dynamic import');
  t.true(imports(join(src, 'tui', 'presenter.tsx')).includes('../report/presenter.js'), 'import type');
  t.true(imports(join(src, 'vm', 'index.ts')).includes('./host.js'), 'export type ... from');
  t.is(layerOf(join(src, 'vm', 'libvirt', 'ffi.ts')), 'vm');
  t.true(sourceFiles(src).length > 50);
});
