/**
 * No leak, whenever a creation is stopped: an abort at any point of createNode (during the base image upload,
 * between volumes, around the define) leaves nothing of the session, or a node that is then removed; close()
 * and destroyAll() wait for creations under way. Against the private libvirtd of daemon.ts (its own pool); no
 * guest boots, so the file is short.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { EventBus } from '../../src/core/bus.js';
import { baseVolumeName, volumePrefix } from '../../src/vm/domain-xml.js';
import type { NodeSpec } from '../../src/vm/index.js';
import { Connection } from '../../src/vm/libvirt/connection.js';
import { openHost } from '../../src/vm/libvirt/index.js';
import { listDevpivotDomains, listDevpivotVolumes } from '../../src/vm/libvirt/inventory.js';
import { imageDigest, inspectQcow2 } from '../../src/vm/qcow2.js';
import { tempDir } from '../helpers/temp.js';
import { startTestDaemon, type TestDaemon } from './daemon.js';

let daemon: TestDaemon;
test.before(async () => {
  daemon = await startTestDaemon();
});
test.after.always(async () => {
  await daemon?.dispose();
});

const session = (tag: string) => `test-abort-${tag}-${randomBytes(3).toString('hex')}`;

/** A qcow2 of random content (a base image no pool has yet: creating a node uploads it). */
function freshImage(mib: number): string {
  const dir = tempDir('devpivot-abort-');
  chmodSync(dir, 0o755);
  const raw = join(dir, 'random.raw');
  writeFileSync(raw, randomBytes(mib * 1024 * 1024));
  const image = join(dir, 'base.qcow2');
  execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', raw, image]);
  chmodSync(image, 0o644);
  return image;
}

function spec(image: string): NodeSpec {
  return {
    name: 'n1',
    image,
    ignition: '{"ignition":{"version":"3.0.0"}}',
    memoryMiB: 128,
    vcpus: 1,
    firmware: 'bios',
  };
}

async function leftovers(sessionId: string): Promise<{ domains: string[]; volumes: string[] }> {
  const conn = await Connection.open(daemon.tcpUri);
  try {
    const domains = (await listDevpivotDomains(conn)).filter((d) => d.session === sessionId).map((d) => d.name);
    const volumes = (await listDevpivotVolumes(conn))
      .filter((v) => v.name.startsWith(volumePrefix(sessionId)))
      .map((v) => v.name);
    return { domains, volumes };
  } finally {
    await conn.close();
  }
}

async function baseVolumes(): Promise<string[]> {
  const conn = await Connection.open(daemon.tcpUri);
  try {
    return (await listDevpivotVolumes(conn)).filter((v) => v.session === undefined).map((v) => v.name);
  } finally {
    await conn.close();
  }
}

function host(sessionId: string) {
  return openHost({
    uri: daemon.tcpUri,
    sessionId,
    bus: new EventBus(),
    stateDir: tempDir('dp-abort-state-'),
    poolPath: daemon.poolPath,
  });
}

async function settled(work: Promise<unknown>): Promise<'resolved' | 'rejected' | 'pending'> {
  return Promise.race([
    work.then(
      () => 'resolved' as const,
      () => 'rejected' as const,
    ),
    new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending'))),
  ]);
}

async function assertNothingLeft(t: ExecutionContext, sessionId: string, what: string): Promise<void> {
  t.deepEqual(await leftovers(sessionId), { domains: [], volumes: [] }, what);
}

test.serial('an abort at any point of createNode leaves nothing, or a node that removing removes', async (t) => {
  t.timeout(300_000);
  const image = freshImage(24);
  const base = baseVolumeName(await imageDigest(await inspectQcow2(image), join(tmpdir(), 'dp-abort-digests.json')));
  // The first delays land in the base upload (24 MiB through a libvirt stream), later ones in the per-node
  // volumes and the define; the last ones after the creation finished.
  const delays = [0, 1, 5, 20, 50, 100, 200, 400, 700, 1000, 1500, 2500];
  const outcomes: string[] = [];
  for (const delay of delays) {
    const sessionId = session(`d${delay}`);
    const vm = await host(sessionId);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('stopped by the test')), delay);
    let outcome: string;
    try {
      const node = await vm.createNode(spec(image), controller.signal);
      outcome = 'created';
      await node.destroy();
    } catch (error) {
      outcome = (error as Error).message === 'stopped by the test' ? 'stopped' : `failed: ${(error as Error).message}`;
    } finally {
      clearTimeout(timer);
    }
    // Nothing of the session survives: no destroyAll here, the rollback (or the node's own destroy) did it.
    await assertNothingLeft(t, sessionId, `abort after ${delay} ms (${outcome})`);
    const bases = await baseVolumes();
    if (!bases.includes(base)) outcomes.push(`${delay}ms: ${outcome}, base upload stopped`);
    else outcomes.push(`${delay}ms: ${outcome}`);
    await vm.close();
  }
  t.log(outcomes.join('\n'));
  t.true(
    outcomes.some((o) => o.includes('stopped')),
    'some aborts stopped a creation',
  );
  t.true(
    outcomes.some((o) => o.includes('created')),
    'the longest delays let it finish',
  );
  t.false(
    outcomes.some((o) => o.includes('failed')),
    'an abort is the only reason a creation ended',
  );
});

test.serial('close() and destroyAll() stop a creation under way and wait for it', async (t) => {
  for (const end of ['close', 'destroyAll'] as const) {
    const image = freshImage(16);
    const sessionId = session(end.toLowerCase());
    const vm = await host(sessionId);
    const creating = vm.createNode(spec(image));
    creating.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 30));
    await vm[end]();
    t.not(await settled(creating), 'pending', `${end} returned while the creation still ran`);
    if (end === 'destroyAll') await vm.close();
    await assertNothingLeft(t, sessionId, `after ${end}`);
  }
});
