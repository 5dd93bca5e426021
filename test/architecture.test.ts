import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import test from 'ava';
import { repoRoot } from './helpers/cli.js';

const src = join(repoRoot, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((match) => match[1]!);
}

// DESIGN §4: the engine and everything under it never import a UI; UIs subscribe to events.
test('engine, registry, vm, oscontainer and ignition never import tui, report or cli', (t) => {
  const layers = ['engine', 'registry', 'vm', 'oscontainer', 'ignition', 'core', 'scenario'];
  const forbidden = /(^|\/)(tui|report|cli)(\/|$)/;
  const offences: string[] = [];
  for (const layer of layers) {
    let files: string[] = [];
    try {
      files = sourceFiles(join(src, layer));
    } catch {
      continue;
    }
    for (const file of files) {
      for (const target of imports(file)) {
        if (!target.startsWith('.')) continue;
        const resolved = relative(src, join(file, '..', target));
        if (forbidden.test(resolved)) offences.push(`${relative(repoRoot, file)} imports ${target}`);
      }
    }
  }
  t.deepEqual(offences, []);
});

test('only src/vm/libvirt/ffi.ts imports koffi', (t) => {
  const importers = sourceFiles(src)
    .filter((file) => imports(file).includes('koffi'))
    .map((file) => relative(repoRoot, file));
  t.true(
    importers.every((file) => file === 'src/vm/libvirt/ffi.ts'),
    importers.join(', '),
  );
});

test('the import scanner sees imports (guards the two tests above)', (t) => {
  t.true(imports(join(src, 'cli', 'main.ts')).includes('./verbs.js'));
});
