import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

async function file(name: string, text: string): Promise<string> {
  const dir = tempDir('devpivot-scenario-cli-');
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

test('devpivot run without a file is a usage error', async (t) => {
  const result = await runCli(['run']);
  t.is(result.code, 2);
  t.regex(result.stderr, /missing argument for 'devpivot run'/);
});

test('a malformed scenario: exit 2, every problem with file:line:col, nothing runs', async (t) => {
  const good = await file('good.yaml', 'nodes:\n  node1: {}\n');
  const bad = await file('bad.yaml', 'nodes:\n  node1:\n    imagee: fixture:1\nsteps:\n  - up\n  - expct: {}\n');
  const result = await runCli(['run', good, bad]);
  t.is(result.code, 2);
  t.regex(result.stderr, /error\[SCENARIO_INVALID\]: 2 problem\(s\) in scenario/);
  t.true(result.stderr.includes(`${bad}:3:5: unknown key 'imagee' in node 'node1' (did you mean 'image'?)`));
  t.true(result.stderr.includes(`${bad}:6:5: unknown step 'expct' (did you mean 'expect'?)`));
  t.regex(result.stderr, /hint: see scenarios\/README\.md/);
  t.is(result.stdout, '', 'the good scenario did not start either');
});

test('a missing scenario file: exit 2 with a hint', async (t) => {
  const result = await runCli(['up', '/nonexistent/x.yaml']);
  t.is(result.code, 2);
  t.regex(result.stderr, /error\[SCENARIO_NOT_FOUND\]: cannot read scenario \/nonexistent\/x\.yaml/);
});

test('up and run document their options', async (t) => {
  const up = await runCli(['up', '--help']);
  t.is(up.code, 0);
  for (const option of ['--json', '--junit FILE', '--keep', '--connect URI'])
    t.true(up.stdout.includes(option), option);
  t.regex(up.stdout, /scenarios\/old-to-new\.yaml/);
  const run = await runCli(['run', '--help']);
  t.regex(run.stdout, /Exit status: 0 passed, 1 a scenario failed, 2 a usage or set-up error/);
  const typo = await runCli(['run', 'x.yaml', '--junt', 'a.xml']);
  t.is(typo.code, 2);
  t.regex(typo.stderr, /did you mean '--junit'\?/);
});
