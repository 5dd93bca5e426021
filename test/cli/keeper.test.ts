/** `down` signals a kept session's keeper only when the pid in keeper.json is that very process, not a recycled pid. */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { keeperOf } from '../../src/cli/keep.js';
import { tempDir } from '../helpers/temp.js';

test('a live process whose command line says devpivot but did not write keeper.json is not the keeper', async (t) => {
  const state = tempDir('devpivot-keeper-');
  const impostor = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', 'devpivot'], { stdio: 'ignore' });
  t.teardown(() => impostor.kill());
  await new Promise((resolve) => setTimeout(resolve, 200));
  mkdirSync(join(state, 'sessions', 's1'), { recursive: true });
  writeFileSync(
    join(state, 'sessions', 's1', 'keeper.json'),
    JSON.stringify({ pid: impostor.pid, since: new Date().toISOString() }),
  );
  t.is(await keeperOf(state, 's1'), undefined);
});
