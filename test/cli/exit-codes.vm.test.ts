/**
 * The rows of the exit status contract that need libvirt (0 passed, 1 a check failed, 130 Ctrl-C during a run:
 * this was old-to-new.vm.test.ts's second test, which booted the fixture for it), and `--keep`: the kept
 * VMs keep their registry and console logging while the process serves them, until Ctrl-C or `devpivot down`.
 * Against the private libvirtd of test/vm/daemon.ts; the node boots a blank disk (SeaBIOS finds nothing), which
 * is all these rows need, so the file stays short.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { volumePrefix } from '../../src/vm/domain-xml.js';
import { Connection } from '../../src/vm/libvirt/connection.js';
import { listDevpivotDomains, listDevpivotVolumes } from '../../src/vm/libvirt/inventory.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { startTestDaemon, type TestDaemon } from '../vm/daemon.js';
import { watchCli } from './process.js';

let daemon: TestDaemon;
test.before(async () => {
  daemon = await startTestDaemon();
});
test.after.always(async () => {
  await daemon?.dispose();
});

function workspace(name: string, steps: string) {
  const dir = tempDir('devpivot-exit-vm-');
  chmodSync(dir, 0o755);
  const disk = join(dir, 'blank.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '16M']);
  chmodSync(disk, 0o644);
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `images:\n  blank: ${disk}\nnodes:\n  n: { image: blank, memory: 256 }\nsteps:\n${steps}`);
  const env = {
    DEVPIVOT_STATE_DIR: join(dir, 'state'),
    DEVPIVOT_CACHE_DIR: join(dir, 'cache'),
    DEVPIVOT_POOL_PATH: daemon.poolPath,
  };
  return { file, env, session: `test-exit-${name}-${process.pid}` };
}

async function sessionObjects(session: string): Promise<{ domains: string[]; volumes: string[]; running: number }> {
  const conn = await Connection.open(daemon.tcpUri);
  try {
    const domains = (await listDevpivotDomains(conn)).filter((d) => d.session === session);
    const volumes = (await listDevpivotVolumes(conn)).filter((v) => v.name.startsWith(volumePrefix(session)));
    return {
      domains: domains.map((d) => d.name),
      volumes: volumes.map((v) => v.name),
      running: domains.filter((d) => d.active).length,
    };
  } finally {
    await conn.close();
  }
}

test.serial('0: every step passed', async (t) => {
  const { file, env, session } = workspace('pass', '  - up\n  - wait: 1s\n  - down\n');
  const run = await runCli(['run', file, '--connect', daemon.tcpUri, '--session', session], { env });
  t.is(run.code, 0, run.stdout + run.stderr);
  t.regex(run.stdout, /PASSED/);
  t.deepEqual(await sessionObjects(session), { domains: [], volumes: [], running: 0 });
});

test.serial('1: a check failed (an expectation not met by its deadline); the VM is removed', async (t) => {
  const { file, env, session } = workspace('fail', "  - up\n  - expect: { console: 'never printed', within: 3s }\n");
  const run = await runCli(['run', file, '--connect', daemon.tcpUri, '--session', session], { env });
  t.is(run.code, 1, run.stdout + run.stderr);
  t.regex(run.stdout, /✗ expect n console \/never printed\/ within 3s .*not seen within 3s/);
  t.deepEqual(await sessionObjects(session), { domains: [], volumes: [], running: 0 });
});

test.serial('130: Ctrl-C during a run: the run stops, the VM is removed', async (t) => {
  const { file, env, session } = workspace(
    'interrupt',
    "  - up\n  - expect: { console: 'never printed', within: 5m }\n",
  );
  const run = watchCli(['run', file, '--json', '--connect', daemon.tcpUri, '--session', session], env);
  await run.until(/"kind":"vm\.started"/, 120_000);
  run.signal('SIGINT');
  const end = await run.exited;
  t.is(end.code, 130, `interrupted by SIGINT (README "Exit status")\n${run.stderr}`);
  const events = run.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { kind: string; error?: string; ok?: boolean });
  // The last step to end is the one under way, failed as interrupted.
  const last = events.filter((e) => e.kind === 'step.pass' || e.kind === 'step.fail').at(-1);
  t.like(last, { kind: 'step.fail', error: 'interrupted (interrupted by SIGINT)' });
  t.like(events.at(-1), { kind: 'run.end', ok: false });
  t.deepEqual(await sessionObjects(session), { domains: [], volumes: [], running: 0 });
});

test.serial(
  '141: the reader of --json goes away (a killed test runner, `| head`): the run stops, the VM is removed',
  async (t) => {
    // Before the fix the next event's write died on an unhandled EPIPE and left the domain running.
    const { file, env, session } = workspace(
      'closed',
      "  - up\n  - wait: 5s\n  - expect: { console: 'never printed', within: 5m }\n",
    );
    const run = watchCli(['run', file, '--json', '--connect', daemon.tcpUri, '--session', session], env);
    await run.until(/"kind":"vm\.started"/, 120_000);
    run.child.stdout!.destroy();
    const end = await run.exited;
    t.is(end.code, 141, `stopped as by SIGPIPE\n${run.stderr}`);
    t.notRegex(run.stderr, /EPIPE|Unhandled/);
    t.deepEqual(await sessionObjects(session), { domains: [], volumes: [], running: 0 });
  },
);

async function registryAnswers(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(3000) })).status === 200;
  } catch {
    return false;
  }
}

test.serial('--keep: the registry and the VM stay while the process serves them; Ctrl-C removes them', async (t) => {
  const { file, env, session } = workspace('keep', '  - up\n  - wait: 1s\n');
  const run = watchCli(['run', file, '--connect', daemon.tcpUri, '--session', session, '--keep'], env);
  await run.until(/kept: n \(devpivot-\S+-n\); registry at (http:\/\/127\.0\.0\.1:\d+)/, 120_000);
  const url = /registry at (http:\/\/127\.0\.0\.1:\d+)/.exec(run.stderr)![1]!;
  t.true(await registryAnswers(url), 'the kept VMs can still pull');
  t.is((await sessionObjects(session)).running, 1, 'the VM runs');
  t.true(existsSync(join(env.DEVPIVOT_STATE_DIR, 'sessions', session, 'keeper.json')));
  await new Promise((resolve) => setTimeout(resolve, 1500));
  t.is(run.child.exitCode, null, 'still serving');
  run.signal('SIGINT');
  const end = await run.exited;
  t.is(end.code, 0, `the run's own status\n${run.stdout}${run.stderr}`);
  t.false(await registryAnswers(url));
  t.deepEqual(await sessionObjects(session), { domains: [], volumes: [], running: 0 });
  t.false(existsSync(join(env.DEVPIVOT_STATE_DIR, 'sessions', session, 'keeper.json')));
});

test.serial('--keep: devpivot down of that session stops the serving process, which cleans up', async (t) => {
  const { file, env, session } = workspace('keep-down', '  - up\n');
  const run = watchCli(['run', file, '--connect', daemon.tcpUri, '--session', session, '--keep'], env);
  await run.until(/kept: n /, 120_000);
  const down = await runCli(['down', '--session', session, '--connect', daemon.tcpUri], { env });
  t.is(down.code, 0, down.stdout + down.stderr);
  t.regex(down.stdout, new RegExp(`stopped the devpivot serving session ${session} \\(pid \\d+\\)`));
  const end = await run.exited;
  t.is(end.code, 0, run.stdout + run.stderr);
  t.deepEqual(await sessionObjects(session), { domains: [], volumes: [], running: 0 });
});
