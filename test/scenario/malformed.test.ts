/**
 * The malformed scenario table: every file of test/scenario/malformed/ is one kind of mistake (more than one per
 * validation category), with the problems it must produce written at its end (`# expect: LINE:COL text`). Each
 * must be refused before anything runs: exit status 2, every problem at its `file:line:col`, and nothing started
 * (no registry storage, no session record, no fixture build in fresh state and cache directories; a libvirt URI
 * that cannot be reached, so a connection attempt would show).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import test from 'ava';
import { main } from '../../src/cli/main.js';
import { scenarioEnvironment } from '../../src/cli/scenario-environment.js';
import { loadScenario, ScenarioError } from '../../src/scenario/parse.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { type Expected, type MalformedFile, malformedFiles } from './malformed.js';

const files = malformedFiles();
const UNREACHABLE = 'qemu+unix:///system?socket=/nonexistent/libvirt-sock';

function matches(expected: Expected, issue: { line: number; col: number; message: string; hint?: string }): boolean {
  const text = `${issue.message}${issue.hint ? ` (${issue.hint})` : ''}`;
  return (
    issue.line === expected.line &&
    (expected.col === undefined || issue.col === expected.col) &&
    text.includes(expected.text)
  );
}

test('the table has more than 60 kinds of mistake, each with what it must report', (t) => {
  t.true(files.length >= 60, `${files.length} files`);
  for (const file of files) t.true(file.expected.length > 0, `${file.name} has no '# expect:' line`);
});

test('each malformed file gives exactly its problems, at their positions', async (t) => {
  const env = scenarioEnvironment();
  for (const file of files) {
    const error = await t.throwsAsync(() => loadScenario(file.path, env), { instanceOf: ScenarioError }, file.name);
    if (!(error instanceof ScenarioError)) continue;
    const got = error.issues.map((i) => `${i.line}:${i.col} ${i.message}${i.hint ? ` (${i.hint})` : ''}`);
    t.is(error.issues.length, file.expected.length, `${file.name}:\n${got.join('\n')}`);
    for (const expected of file.expected)
      t.true(
        error.issues.some((issue) => matches(expected, issue)),
        `${file.name}: want ${expected.line}:${expected.col ?? ''} ${expected.text}\ngot ${got.join('\n    ')}`,
      );
  }
});

function collector(): Writable & { text: string } {
  const out = new Writable({
    write(chunk, _encoding, done) {
      out.text += String(chunk);
      done();
    },
  }) as Writable & { text: string };
  out.text = '';
  return out;
}

/** The CLI, in a fresh state and cache directory: as a process (`spawn`), or its `main` in this process. */
async function isolated(
  args: string[],
  how: 'spawn' | 'main' = 'spawn',
): Promise<CliResult & { state: string[]; cache: string[] }> {
  const state = await mkdtemp(join(tmpdir(), 'devpivot-malformed-state-'));
  const cache = await mkdtemp(join(tmpdir(), 'devpivot-malformed-cache-'));
  const env = { DEVPIVOT_STATE_DIR: state, DEVPIVOT_CACHE_DIR: cache, LIBVIRT_DEFAULT_URI: UNREACHABLE, CI: 'true' };
  try {
    let result: CliResult;
    if (how === 'spawn') result = await runCli(args, { env });
    else {
      const stdout = collector();
      const stderr = collector();
      const code = await main(args, {
        stdout,
        stderr,
        env: { ...process.env, ...env },
        signal: new AbortController().signal,
      });
      result = { code, stdout: stdout.text, stderr: stderr.text };
    }
    return { ...result, state: await readdir(state), cache: await readdir(cache) };
  } finally {
    await rm(state, { recursive: true, force: true });
    await rm(cache, { recursive: true, force: true });
  }
}

function assertRefused(
  t: import('ava').ExecutionContext,
  file: MalformedFile,
  result: Awaited<ReturnType<typeof isolated>>,
) {
  t.is(result.code, 2, `${file.name}: ${result.stderr}`);
  t.regex(result.stderr, /error\[SCENARIO_INVALID\]/, file.name);
  for (const expected of file.expected)
    t.true(
      result.stderr.includes(`${file.path}:${expected.line}:${expected.col ?? ''}`),
      `${file.name}: no ${expected.line}:${expected.col ?? ''} in\n${result.stderr}`,
    );
  t.is(result.stdout, '', `${file.name}: nothing ran`);
  t.deepEqual(result.state, [], `${file.name}: no registry storage, no session record`);
  t.deepEqual(result.cache, [], `${file.name}: no fixture build, no download`);
}

test('each malformed file, through the CLI: exit status 2 with file:line:col, nothing started', async (t) => {
  for (const file of files)
    assertRefused(t, file, await isolated(['run', file.path, '--connect', UNREACHABLE, '--json'], 'main'));
});

test('one malformed file of each section, as its own devpivot process', async (t) => {
  const names = ['timeout-zero', 'image-path-missing', 'osc-commit-absent', 'registry-path', 'node-memory-huge'];
  const more = ['kargs-line-break', 'ign-relative-path', 'expect-before-up', 'fault-external', 'yaml-syntax'];
  await Promise.all(
    [...names, ...more].map(async (name) => {
      const file = files.find((f) => f.name === `${name}.yaml`)!;
      assertRefused(t, file, await isolated(['run', file.path, '--connect', UNREACHABLE]));
    }),
  );
});

test('all malformed files at once: every problem of every file in one report, nothing started', async (t) => {
  const result = await isolated(['run', ...files.map((file) => file.path)]);
  t.is(result.code, 2);
  const total = files.reduce((sum, file) => sum + file.expected.length, 0);
  t.true(
    result.stderr.startsWith(`error[SCENARIO_INVALID]: ${total} problem(s) in ${files.length} of ${files.length}`),
    result.stderr.slice(0, 200),
  );
  for (const file of files)
    for (const expected of file.expected)
      t.true(
        result.stderr.includes(`${file.path}:${expected.line}:${expected.col ?? ''}`),
        `${file.name}:${expected.line}`,
      );
  t.deepEqual([result.state, result.cache], [[], []]);
});

test('devpivot up refuses a malformed file the same way', async (t) => {
  const file = files.find((f) => f.name === 'node-image-no-disk.yaml')!;
  assertRefused(t, file, await isolated(['up', file.path]));
});
