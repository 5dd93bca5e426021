/**
 * The fixture lock's takeover cannot end with two holders (issue 28 item 6): processes that all find a lock left by
 * a dead owner race to take it over, and the times each held it never overlap.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { tempDir } from '../helpers/temp.js';

const racer = fileURLToPath(new URL('./lock-racer.js', import.meta.url));

function contend(lock: string, log: string): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [racer, lock, log], { stdio: 'ignore' });
    child.on('close', resolve);
  });
}

test('contenders taking over a dead owner’s lock hold it one at a time', async (t) => {
  const dir = tempDir('devpivot-lock-race-');
  const rounds = 6;
  const contenders = 4;
  for (let round = 0; round < rounds; round++) {
    const lock = join(dir, `round-${round}.lock`);
    const log = join(dir, `round-${round}.log`);
    writeFileSync(lock, '999999999\n'); // no such pid: every contender finds a stale lock
    writeFileSync(log, '');
    const codes = await Promise.all(Array.from({ length: contenders }, () => contend(lock, log)));
    t.deepEqual(codes, Array(contenders).fill(0));
    const events = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(' '))
      .map(([kind, pid, at]) => ({ kind: kind!, pid: pid!, at: Number(at) }))
      .sort((a, b) => a.at - b.at);
    let holders = 0;
    let most = 0;
    for (const event of events) {
      holders += event.kind === 'enter' ? 1 : -1;
      most = Math.max(most, holders);
    }
    t.is(events.length, contenders * 2);
    t.is(most, 1, `round ${round}: ${JSON.stringify(events)}`);
  }
});

test('a holder that is still alive is waited for up to the timeout, then named in the error', async (t) => {
  const { acquireLock } = await import('../../src/fixture/lock.js');
  const lock = join(tempDir('devpivot-lock-wait-'), 'x.lock');
  const held = await acquireLock(lock);
  t.teardown(() => held.release());
  const started = Date.now();
  const error = await t.throwsAsync(acquireLock(lock, undefined, 700));
  t.like(error, { code: 'FIXTURE_LOCKED' });
  t.regex(error?.message ?? '', new RegExp(`pid ${process.pid}`));
  t.true(Date.now() - started >= 600);
});
