/**
 * Chaos: a pivot is interrupted the hard ways, and every case ends with zero devpivot domains and volumes of its
 * session while a foreign domain and another session's volume stay untouched:
 *   1. kill -9 in the middle of the pull, then `devpivot down`;
 *   2. SIGTERM in the middle of the pull (exit 143, cleaned up by the run itself);
 *   3. two SIGINTs in a row (exit 130 within 2 s of the second; the removal is finished by the handed-over down);
 *   4. libvirtd restarts in the middle of the pull (the run reconnects, the pivot completes, exit 0).
 * All against the private libvirtd of test/vm/daemon.ts (case 4 restarts it; the system daemon is never touched).
 * The pull is throttled so that it is still running when the chaos strikes.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { volumePrefix } from '../../src/vm/domain-xml.js';
import { Connection } from '../../src/vm/libvirt/connection.js';
import { listDevpivotDomains, listDevpivotVolumes } from '../../src/vm/libvirt/inventory.js';
import { ensurePool } from '../../src/vm/libvirt/pool.js';
import { volumeXml } from '../../src/vm/storage-xml.js';
import { watchCli } from '../cli/process.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { startTestDaemon, type TestDaemon } from '../vm/daemon.js';

let daemon: TestDaemon;
const FOREIGN_DOMAIN = 'devpivot-chaos-foreign';
const FOREIGN_VOLUME = 'devpivot-othersession--node1.qcow2';

test.before(async () => {
  daemon = await startTestDaemon();
  const conn = await Connection.open(daemon.tcpUri);
  try {
    // Named like devpivot's own, but without its metadata: never devpivot's to remove.
    const foreign = await conn.defineDomain(
      `<domain type='qemu'><name>${FOREIGN_DOMAIN}</name><memory unit='MiB'>64</memory>` +
        "<os><type arch='x86_64'>hvm</type></os></domain>",
    );
    foreign.free();
    const { pool } = await ensurePool(conn, daemon.poolPath);
    (await pool.createVolume(volumeXml({ name: FOREIGN_VOLUME, capacity: 1024 * 1024, format: 'raw' }))).free();
    pool.free();
  } finally {
    await conn.close();
  }
});

test.after.always(async () => {
  await daemon?.dispose();
});

const SCENARIO = `timeout: 15m
nodes:
  node1: { pivot: fixture:2 }
steps:
  - fault: { registry: slow, rate: 1MiB/s }
  - up
  - expect: { event: pivot.pulling, within: 6m }
  - wait: 3s
  - fault: { registry: clear }
  - expect: { booted: fixture:2, within: 10m }
`;

function start(tag: string) {
  const dir = tempDir(`devpivot-chaos-${tag}-`);
  const file = join(dir, `chaos-${tag}.yaml`);
  writeFileSync(file, SCENARIO);
  const session = `test-chaos-${tag}-${process.pid.toString(36)}`;
  const env = { DEVPIVOT_STATE_DIR: join(dir, 'state'), DEVPIVOT_POOL_PATH: daemon.poolPath };
  const run = watchCli(['run', file, '--json', '--session', session, '--connect', daemon.tcpUri], env, 900_000);
  return { run, session, env };
}

const PULLING = /"kind":"guest\.pivot","node":"node1","phase":"pulling"/;

async function objects(session: string) {
  const conn = await Connection.open(daemon.tcpUri);
  try {
    const all = await listDevpivotDomains(conn);
    const volumes = await listDevpivotVolumes(conn);
    const foreign = await conn.lookupDomain(FOREIGN_DOMAIN);
    foreign?.free();
    return {
      domains: all.filter((d) => d.session === session).map((d) => d.name),
      volumes: volumes.filter((v) => v.name.startsWith(volumePrefix(session))).map((v) => v.name),
      foreignDomain: foreign !== undefined,
      foreignVolume: volumes.some((v) => v.name === FOREIGN_VOLUME),
    };
  } finally {
    await conn.close();
  }
}

async function assertClean(t: ExecutionContext, session: string, within = 0): Promise<number> {
  const started = Date.now();
  let now = await objects(session);
  while (now.domains.length + now.volumes.length > 0 && Date.now() - started < within) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    now = await objects(session);
  }
  t.deepEqual(now, { domains: [], volumes: [], foreignDomain: true, foreignVolume: true });
  return Date.now() - started;
}

test.serial('kill -9 in the middle of the pull, then devpivot down: nothing of the session is left', async (t) => {
  const { run, session, env } = start('kill');
  await run.until(PULLING, 600_000);
  run.signal('SIGKILL');
  const end = await run.exited;
  t.is(end.signal, 'SIGKILL');
  const left = await objects(session);
  t.true(left.domains.length === 1 && left.volumes.length >= 2, `the kill left the VM behind: ${JSON.stringify(left)}`);
  const down = await runCli(['down', '--session', session, '--connect', daemon.tcpUri], { env });
  t.is(down.code, 0, down.stdout + down.stderr);
  t.regex(down.stdout, new RegExp(`removed domain devpivot-${session}-node1`));
  await assertClean(t, session);
});

test.serial('SIGTERM in the middle of the pull: exit 143, the run removed its VM itself', async (t) => {
  const { run, session } = start('term');
  await run.until(PULLING, 600_000);
  run.signal('SIGTERM');
  const end = await run.exited;
  t.log(`SIGTERM: exited ${end.afterSignalMs} ms after the signal`);
  t.is(end.code, 143, run.stderr);
  t.regex(run.stdout, /"kind":"step\.fail".*interrupted \(interrupted by SIGTERM\)/);
  await assertClean(t, session);
});

test.serial('two SIGINTs in a row: exit 130 within 2 s of the second; the removal is finished after it', async (t) => {
  const { run, session } = start('int2');
  await run.until(PULLING, 600_000);
  run.signal('SIGINT');
  await new Promise((resolve) => setTimeout(resolve, 50));
  run.signal('SIGINT');
  const end = await run.exited;
  t.log(`double SIGINT: exited ${end.afterSignalMs} ms after the second signal`);
  t.is(end.code, 130, run.stderr);
  t.true(end.afterSignalMs! < 2000, `${end.afterSignalMs} ms`);
  const ms = await assertClean(t, session, 60_000);
  t.log(`nothing of the session left ${ms} ms after the exit`);
});

test.serial('libvirtd restarts in the middle of the pull: the run reconnects, the pivot completes', async (t) => {
  const { run, session } = start('restart');
  await run.until(PULLING, 600_000);
  await daemon.stop();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  await daemon.restart();
  const end = await run.exited;
  t.is(
    end.code,
    0,
    `${run.stdout
      .split('\n')
      .filter((l) => /step\.(pass|fail)|"level":"(warn|error)"/.test(l))
      .join('\n')}\n${run.stderr}`,
  );
  t.regex(run.stdout, /lost the libvirt connection/);
  t.regex(run.stdout, /reconnected to /);
  t.regex(run.stdout, /"kind":"guest\.booted","node":"node1".*"version":"2"/);
  await assertClean(t, session);
});
