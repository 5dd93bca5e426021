/**
 * `devpivot run --shard I/N` and `--list` through the real bin: nothing here runs a scenario (--list, usage
 * errors, an empty shard all end before the engine is loaded).
 */
import { readdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { repoRoot, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

const scenarios = readdirSync(join(repoRoot, 'scenarios'))
  .filter((name) => name.endsWith('.yaml'))
  .sort()
  .map((name) => `scenarios/${name}`);

const run = (args: string[]) => runCli(['run', ...args], { cwd: repoRoot });
const lines = (stdout: string) => stdout.split('\n').filter((line) => line !== '');

async function tempFile(name: string, text: string): Promise<string> {
  const dir = tempDir('devpivot-shard-');
  await writeFile(join(dir, name), text);
  return join(dir, name);
}

test('--list --shard 1/2 and 2/2 of scenarios/*.yaml: together every file exactly once, nothing run', async (t) => {
  t.true(scenarios.length >= 2);
  const first = await run(['--list', '--shard', '1/2', ...scenarios]);
  const second = await run(['--list', '--shard', '2/2', ...scenarios]);
  for (const result of [first, second]) {
    t.is(result.code, 0, result.stderr);
    t.is(result.stderr, '');
  }
  const one = lines(first.stdout);
  const two = lines(second.stdout);
  t.true(Math.abs(one.length - two.length) <= 1, `${one.length} and ${two.length} files`);
  t.deepEqual([...one, ...two].sort(), scenarios);
  t.is(new Set([...one, ...two]).size, scenarios.length, 'no file in both shards');
});

test('the assignment does not depend on the order of the files or on a file given twice', async (t) => {
  const expected = await run(['--list', '--shard', '2/3', ...scenarios]);
  const reordered = await run(['--list', '--shard', '2/3', ...[...scenarios].reverse(), scenarios[0]!, scenarios[3]!]);
  t.is(reordered.code, 0);
  t.is(reordered.stdout, expected.stdout);
  t.true(lines(expected.stdout).length > 0);
});

test('--list without --shard prints every file as given and runs nothing', async (t) => {
  const result = await run(['--list', 'scenarios/two-nodes.yaml', '/nonexistent/x.yaml']);
  t.is(result.code, 0, result.stderr);
  t.is(result.stdout, 'scenarios/two-nodes.yaml\n/nonexistent/x.yaml\n');
});

test('--shard-timings balances by recorded time: a long file gets a shard of its own', async (t) => {
  const long = 'scenarios/old-to-new.yaml';
  const suites = scenarios.map((file, i) =>
    // Half the suites name their file (as devpivot writes it), half only their name (an older report).
    i % 2 === 0
      ? `  <testsuite name="devpivot.n${i}" file="${file}" tests="1" time="${file === long ? 1000 : 10}"></testsuite>`
      : `  <testsuite name="devpivot.${file.slice('scenarios/'.length, -'.yaml'.length)}" time="${file === long ? 1000 : 10}"/>`,
  );
  const report = await tempFile(
    'junit.xml',
    `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="devpivot">\n${suites.join('\n')}\n</testsuites>\n`,
  );
  const first = await run(['--list', '--shard', '1/2', '--shard-timings', report, ...scenarios]);
  const second = await run(['--list', '--shard', '2/2', '--shard-timings', report, ...scenarios]);
  t.is(first.code, 0, first.stderr);
  t.deepEqual(lines(first.stdout), [long]);
  t.deepEqual(
    lines(second.stdout),
    scenarios.filter((file) => file !== long),
  );
});

test('usage errors exit 2 before anything starts, each naming what is wrong and what to do', async (t) => {
  const notJunit = await tempFile('notes.xml', 'these are not timings\n');
  const noTime = await tempFile(
    'old.xml',
    '<?xml version="1.0"?>\n<testsuites>\n<testsuite name="devpivot.a"/>\n</testsuites>\n',
  );
  const cases: [string[], RegExp][] = [
    [
      ['--shard', '0/2'],
      /error\[SHARD_INVALID\]: --shard '0\/2': shards are numbered from 1\nhint: the shards of 2 are 1\/2/,
    ],
    [['--shard', '3/2'], /error\[SHARD_INVALID\]: --shard '3\/2': shard 3 is past the count 2\nhint: /],
    [
      ['--shard', 'a/b'],
      /error\[SHARD_INVALID\]: --shard 'a\/b' is not INDEX\/COUNT\nhint: write --shard INDEX\/COUNT/,
    ],
    [['--shard', '1/0'], /error\[SHARD_INVALID\]: --shard '1\/0': the shard count must be at least 1\nhint: /],
    [
      ['--shard', '1/2', '--shard-timings', '/nonexistent/junit.xml'],
      /error\[SHARD_TIMINGS_INVALID\]: --shard-timings \/nonexistent\/junit\.xml: cannot read it \(ENOENT\)\nhint: pass the --junit FILE/,
    ],
    [
      ['--shard', '1/2', '--shard-timings', notJunit],
      /error\[SHARD_TIMINGS_INVALID\]: --shard-timings .*notes\.xml: not XML/,
    ],
    [
      ['--shard', '1/2', '--shard-timings', noTime],
      /SHARD_TIMINGS_INVALID\]: .*old\.xml: line 3: testsuite 'devpivot\.a' has no time/,
    ],
    [['--shard-timings', noTime], /error\[USAGE\]: --shard-timings needs --shard I\/N/],
  ];
  for (const [args, message] of cases) {
    for (const list of [[], ['--list']]) {
      const result = await run([...list, ...args, '/nonexistent/a.yaml', '/nonexistent/b.yaml']);
      t.is(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      t.regex(result.stderr, message, args.join(' '));
      t.is(result.stdout, '', 'nothing listed, nothing run');
    }
  }
});

test('an empty shard (more shards than files) exits 0 and says so; --junit still gets a report', async (t) => {
  const listed = await run(['--list', '--shard', '3/3', 'scenarios/a.yaml', './scenarios/a.yaml', 'scenarios/b.yaml']);
  t.is(listed.code, 0, listed.stderr);
  t.is(listed.stdout, '');
  t.is(listed.stderr, 'shard 3/3 is empty: 2 scenario file(s) for 3 shards; nothing to run\n');
  const junit = join(tempDir('devpivot-shard-'), 'junit-3.xml');
  // The files do not exist: had the shard not been found empty first, loading them would exit 2.
  const ran = await run(['--shard', '3/3', '/nonexistent/a.yaml', '/nonexistent/b.yaml', '--junit', junit]);
  t.is(ran.code, 0, ran.stderr);
  t.regex(ran.stderr, /^shard 3\/3 is empty: /);
  t.regex(await readFile(junit, 'utf8'), /<testsuites name="devpivot shard 3\/3" tests="0" /);
});

test('run --help documents the sharding options', async (t) => {
  const help = await run(['--help']);
  for (const option of ['--shard I/N', '--shard-timings JUNIT', '--list']) t.true(help.stdout.includes(option), option);
});
