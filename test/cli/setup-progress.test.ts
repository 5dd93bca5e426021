/**
 * Set-up shows apt's and npm's progress as it comes (scripts/run-with-progress.mjs). The commands here are shell
 * scripts that print lines of the shapes apt-get -q, dpkg and `npm ci --loglevel http` print (transcribed from
 * their output, not recorded from a run): real child processes, real pipes, lines split across writes.
 */
import test from 'ava';
import { repoRoot } from '../helpers/cli.js';

interface Progress {
  PROGRESS: { apt: (line: string) => string | null; npm: () => (line: string) => string | null };
  runWithProgress(
    file: string,
    args: string[],
    options: { show: (line: string) => string | null; print: (line: string) => void },
  ): Promise<{ status: number | null; tail: string[] }>;
}
const load = () => import(`${repoRoot}scripts/run-with-progress.mjs`) as Promise<Progress>;

test('apt: a line per package fetched, unpacked and set up, printed while the command still runs', async (t) => {
  const { PROGRESS, runWithProgress } = await load();
  const printed: [number, string][] = [];
  const started = Date.now();
  const script = [
    'echo "Reading package lists..."',
    // One line written in two pieces: the runner must join them.
    'printf "Get:1 http://deb.debian.org/debian bookworm/main amd64 curl amd64 7.88.1-10 [31"',
    'sleep 0.1',
    'printf "5 kB]\\n"',
    'echo "Selecting previously unselected package curl."',
    'echo "Unpacking curl (7.88.1-10) ..."',
    'sleep 1',
    'echo "Setting up curl (7.88.1-10) ..." >&2',
  ].join('\n');
  const result = await runWithProgress('sh', ['-c', script], {
    show: PROGRESS.apt,
    print: (line) => printed.push([Date.now() - started, line]),
  });
  t.is(result.status, 0);
  t.deepEqual(
    printed.map(([, line]) => line),
    [
      'Get:1 http://deb.debian.org/debian bookworm/main amd64 curl amd64 7.88.1-10 [315 kB]',
      'Unpacking curl (7.88.1-10) ...',
      'Setting up curl (7.88.1-10) ...',
    ],
  );
  t.true(printed[1]![0] + 500 < printed[2]![0], `shown as it came, not at the end: ${JSON.stringify(printed)}`);
  t.true(result.tail.includes('Selecting previously unselected package curl.'), 'the rest is kept for a failure');
});

test('npm: fetches counted every 25, warnings and the summary shown; a failure returns its last 15 lines', async (t) => {
  const { PROGRESS, runWithProgress } = await load();
  const printed: string[] = [];
  const script = [
    'i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo "npm http fetch GET 200 https://registry.npmjs.org/p$i 12ms (cache hit)" >&2; done',
    'echo "npm warn deprecated inflight@1.0.6: This module is not supported" >&2',
    'sleep 0.3', // stdout and stderr are two pipes: their order is only what time makes it
    'echo "added 205 packages in 22s"',
    'exit 3',
  ].join('\n');
  const result = await runWithProgress('sh', ['-c', script], { show: PROGRESS.npm(), print: (l) => printed.push(l) });
  t.deepEqual(printed, [
    '25 packages fetched',
    '50 packages fetched',
    'npm warn deprecated inflight@1.0.6: This module is not supported',
    'added 205 packages in 22s',
  ]);
  t.is(result.status, 3);
  t.is(result.tail.length, 15);
  t.is(result.tail.at(-1), 'added 205 packages in 22s');
});

test('a command that does not exist ends with its error, not a hang', async (t) => {
  const { runWithProgress } = await load();
  const result = await runWithProgress('devpivot-no-such-command', [], { show: () => null, print: () => {} });
  t.is(result.status, null);
  t.regex(result.tail.join('\n'), /ENOENT/);
});
