/**
 * --session is checked before anything is created: an id such as `../../evil` once made a directory outside the
 * state directory (sessions/<id>/) before the run exited 2.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

for (const command of ['run', 'up'] as const) {
  test(`${command} --session ../../evil is a usage error and creates nothing`, async (t) => {
    const dir = tempDir('devpivot-session-opt-');
    const disk = join(dir, 'disk.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '16M']);
    const file = join(dir, 's.yaml');
    writeFileSync(file, `images:\n  disk: ${disk}\nnodes:\n  n: { image: disk }\nsteps:\n  - up\n`);
    const state = join(dir, 'a', 'b', 'state');
    const env = { DEVPIVOT_STATE_DIR: state, DEVPIVOT_CACHE_DIR: join(dir, 'cache') };
    const args = command === 'run' ? ['run', file] : ['up', file];
    const result = await runCli([...args, '--session', '../../evil', '--connect', 'test:///default'], { env });
    t.is(result.code, 2, result.stdout + result.stderr);
    t.regex(result.stderr + result.stdout, /invalid session id/);
    t.false(existsSync(join(dir, 'a', 'evil')), 'a directory outside the state directory');
    t.false(existsSync(state), `the state directory was written: ${existsSync(state) ? readdirSync(state) : ''}`);
  });
}
