import { readFileSync } from 'node:fs';
import test from 'ava';
import { run, startProcess } from '../../src/core/exec.js';

/** Running (a zombie is dead: the container's init may never reap an orphan). */
const alive = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
};

test('run captures stdout, stderr, both interleaved, the exit code and stdin', async (t) => {
  const result = await run('sh', ['-c', 'read x; echo "out $x"; echo err >&2; exit 3'], { input: 'hello\n' });
  t.is(result.code, 3);
  t.is(result.stdout, 'out hello\n');
  t.is(result.stderr, 'err\n');
  t.is(result.all, 'out hello\nerr\n');
  t.false(result.timedOut);
  t.is(result.spawnError, undefined);
});

test('run reports a program that cannot start as spawnError, without throwing', async (t) => {
  const result = await run('/nonexistent/devpivot-no-such-program', []);
  t.is(result.code, null);
  t.is(result.spawnError?.code, 'ENOENT');
});

test('run kills the whole process group at its deadline', async (t) => {
  const started = Date.now();
  // The grandchild prints its pid and sleeps; only a group kill ends it.
  const result = await run('sh', ['-c', 'sleep 30 & echo $!; wait'], { timeoutMs: 300 });
  t.true(result.timedOut);
  t.is(result.code, null);
  t.true(Date.now() - started < 10_000);
  const grandchild = Number(result.stdout.trim());
  t.true(grandchild > 0);
  for (let i = 0; i < 50 && alive(grandchild); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.false(alive(grandchild), 'the sleep started by the child was killed too');
});

test('startProcess streams complete lines per stream and flushes an unterminated last line at exit', async (t) => {
  const lines: string[] = [];
  const child = startProcess(
    'sh',
    ['-c', 'printf "a\\nb"; printf "c\\n" >&2; sleep 0.05; printf "b2\\n"; printf tail'],
    {
      onLine: (line, stream) => lines.push(`${stream}:${line}`),
    },
  );
  t.true(typeof child.pid === 'number');
  const exit = await child.exited;
  t.deepEqual(exit, { code: 0, signal: null });
  t.deepEqual(
    lines.filter((line) => line.startsWith('stdout:')),
    ['stdout:a', 'stdout:bb2', 'stdout:tail'],
  );
  t.deepEqual(
    lines.filter((line) => line.startsWith('stderr:')),
    ['stderr:c'],
  );
});

test('aborting the signal of startProcess ends the process group; kill after exit is a no-op', async (t) => {
  const controller = new AbortController();
  const started = Date.now();
  let pid = 0;
  const child = startProcess('sh', ['-c', 'sleep 30 & echo $!; wait'], {
    signal: controller.signal,
    onLine: (line) => {
      pid = Number(line);
      controller.abort();
    },
  });
  const exit = await child.exited;
  t.is(exit.signal, 'SIGTERM');
  t.true(Date.now() - started < 10_000, 'the sleep (which holds the output pipe) did not keep it alive');
  t.true(pid > 0);
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.false(alive(pid));
  t.notThrows(() => child.kill('SIGKILL'));
});
