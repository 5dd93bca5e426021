import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { ERROR_CODES } from '../src/core/error-codes.js';
import { pivotDrivers } from '../src/drivers/index.js';
import { STEP_KINDS } from '../src/steps/index.js';
import { repoRoot } from './helpers/cli.js';

/**
 * The docs' tables name every step kind, driver, event kind and error code the code has. The lists come from the
 * code itself (the step map, the driver list, the event union's source, the error catalog), so a new one fails
 * here until a table row names it.
 */
const doc = (name: string) => readFileSync(join(repoRoot, 'docs', name), 'utf8');

/** Every `code span` inside a Markdown table row of the text. */
function tableNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line.trimStart().startsWith('|')) continue;
    for (const match of line.matchAll(/`([^`]+)`/g)) names.add(match[1]!);
  }
  return names;
}

/** The `kind` literals of the `DevpivotEvent` union, read from its source (the type has no runtime list). */
function eventKinds(): string[] {
  const source = readFileSync(join(repoRoot, 'src', 'core', 'events.ts'), 'utf8');
  const start = source.indexOf('export type DevpivotEvent =');
  const end = source.indexOf('export type EventKind', start);
  return [...source.slice(start, end).matchAll(/kind: '([^']+)'/g)].map((match) => match[1]!);
}

const missing = (names: readonly string[], table: Set<string>) => names.filter((name) => !table.has(name));

test('the lists are read from the code (guards the tests below)', (t) => {
  t.true(STEP_KINDS.includes('ssh'));
  t.true(pivotDrivers().includes('mcd'));
  t.true(eventKinds().includes('registry.upstream'));
  t.true(eventKinds().length > 25);
  t.true(Object.keys(ERROR_CODES).includes('UNAVAILABLE'));
  t.false(tableNames('text `a`\n| `b` | c |').has('a'));
});

test('every step kind is in a table of docs/ARCHITECTURE.md', (t) => {
  t.deepEqual(missing(STEP_KINDS, tableNames(doc('ARCHITECTURE.md'))), []);
});

test('every event kind is in a table of docs/ARCHITECTURE.md', (t) => {
  t.deepEqual(missing(eventKinds(), tableNames(doc('ARCHITECTURE.md'))), []);
});

test('every error code is in a table of docs/ARCHITECTURE.md', (t) => {
  t.deepEqual(missing(Object.keys(ERROR_CODES), tableNames(doc('ARCHITECTURE.md'))), []);
});

test('every pivot driver is in a table of docs/PROTOCOLS.md and of docs/ARCHITECTURE.md', (t) => {
  t.deepEqual(missing(pivotDrivers(), tableNames(doc('PROTOCOLS.md'))), []);
  t.deepEqual(missing(pivotDrivers(), tableNames(doc('ARCHITECTURE.md'))), []);
});
