/**
 * One contender of the lock race in lock-race.test.ts: `node lock-racer.js LOCK LOG`: take the lock, log when this
 * process held it (`enter`/`leave` with a high-resolution time), hold it a moment, release it.
 */
import { appendFileSync } from 'node:fs';
import { acquireLock } from '../../src/fixture/lock.js';

const [lockPath, log] = process.argv.slice(2) as [string, string];
const lock = await acquireLock(lockPath, undefined, 60_000);
const now = () => (performance.timeOrigin + performance.now()).toFixed(3);
appendFileSync(log, `enter ${process.pid} ${now()}\n`);
await new Promise((resolve) => setTimeout(resolve, 150));
appendFileSync(log, `leave ${process.pid} ${now()}\n`);
await lock.release();
