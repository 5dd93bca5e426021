/**
 * On a daemon users share (qemu:///system for the libvirt group), `ps`, `down` and `console` act on the caller's
 * own domains only: the owner uid devpivot records in each domain's metadata. Checked on libvirt's real test
 * driver (test:///default: an in-process hypervisor, no VM), with domains carrying devpivot's metadata as
 * three users would leave them: this process's uid, another uid, and none (defined before owners were recorded).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { DevpivotError } from '../../src/core/errors.js';
import { metadataXml, parseMetadata } from '../../src/vm/domain-xml.js';
import { Connection } from '../../src/vm/libvirt/connection.js';
import { openHost } from '../../src/vm/libvirt/host.js';
import { cleanup, listDevpivotDomains } from '../../src/vm/libvirt/inventory.js';
import { ensurePool } from '../../src/vm/libvirt/pool.js';
import { domainOwner, ownsDomain } from '../../src/vm/owner.js';
import { volumeXml } from '../../src/vm/storage-xml.js';
import { tempDir } from '../helpers/temp.js';

const me = process.getuid?.() ?? 0;
const other = me === 0 ? 1001 : 0;

test('the owner: recorded uid, else the session user on qemu:///session, else root', (t) => {
  t.is(domainOwner(1001, 'qemu:///system', 0), 1001);
  t.is(domainOwner(undefined, 'qemu:///session', 1001), 1001);
  t.is(domainOwner(undefined, 'qemu+ssh://ada@host/session', 1001), 1001);
  t.is(domainOwner(undefined, 'qemu:///system', 1001), 0);
  t.true(ownsDomain(1001, 'qemu:///system', 1001));
  t.false(ownsDomain(0, 'qemu:///system', 1001));
  t.false(ownsDomain(1001, 'qemu:///system', 0));
});

test('the owner survives the metadata round trip; a malformed one is ignored', (t) => {
  const meta = { session: 's', node: 'n', image: 'i', created: 'c', volumes: [], base: 'b', owner: 1001 };
  t.is(parseMetadata(metadataXml(meta))?.owner, 1001);
  t.is(parseMetadata(metadataXml({ ...meta, owner: undefined }))?.owner, undefined);
  const bad = metadataXml(meta).replace('owner="1001"', 'owner="ada"');
  t.is(parseMetadata(bad)?.owner, undefined);
});

function domain(session: string, owner: number | undefined): string {
  const meta = { session, node: 'node1', image: 'i', created: 'c', volumes: [], base: 'b', owner };
  return `<domain type='test'><name>devpivot-${session}-node1</name><memory>65536</memory><os><type>hvm</type></os><metadata>${metadataXml(meta)}</metadata></domain>`;
}

test('listing marks only the caller’s domains as own; down --all removes those and leaves the others', async (t) => {
  // test:///default lives in this process: its domains go with it.
  const conn = await Connection.open('test:///default');
  t.teardown(() => conn.close());
  const sessions = { mine: `own-${process.pid}`, theirs: `theirs-${process.pid}`, legacy: `legacy-${process.pid}` };
  for (const [session, owner] of [
    [sessions.mine, me],
    [sessions.theirs, other],
    [sessions.legacy, undefined],
  ] as const)
    (await conn.defineDomain(domain(session, owner))).free();
  const listed = (await listDevpivotDomains(conn)).filter((d) => Object.values(sessions).includes(d.session));
  const own = Object.fromEntries(listed.map((d) => [d.session, d.own]));
  // test:///default is not a session URI: a domain without an owner is root's.
  t.deepEqual(own, { [sessions.mine]: true, [sessions.theirs]: false, [sessions.legacy]: me === 0 });

  // The test driver refuses undefine's nvram flag (0x4), so every domain cleanup acts on ends in `domains` or in
  // an error naming it: which ones it acted on is what this checks.
  const report = await cleanup(conn, { all: true });
  const touched = (name: string) =>
    report.domains.includes(name) || report.errors.some((error) => error.startsWith(`domain ${name}:`));
  t.true(touched(`devpivot-${sessions.mine}-node1`), JSON.stringify(report));
  t.false(touched(`devpivot-${sessions.theirs}-node1`), 'another user’s domain is left alone');
  t.is(touched(`devpivot-${sessions.legacy}-node1`), me === 0);
});

/**
 * Two users chose the same session id: the other user's domain uses `devpivot-ci-…--node1.qcow2` and its session id
 * is also in the caller's own records (they once ran it). The caller's `down --session` must leave every volume that
 * domain uses, and the domain itself, alone.
 */
test('down --session of a session id another user’s domain holds leaves their volumes and domain alone', async (t) => {
  const conn = await Connection.open('test:///default');
  t.teardown(() => conn.close());
  const { pool } = await ensurePool(conn, tempDir('devpivot-owner-pool-'));
  t.teardown(() => pool.free());
  const session = `shared-${process.pid}`;
  const volumes = [`devpivot-${session}--node1.qcow2`, `devpivot-${session}--node1.ign`];
  for (const name of volumes)
    (await pool.createVolume(volumeXml({ name, capacity: 1024 * 1024, format: 'raw' }))).free();
  const meta = { session, node: 'node1', image: 'i', created: 'c', volumes, base: 'b', owner: other };
  (
    await conn.defineDomain(
      `<domain type='test'><name>devpivot-${session}-node1</name><memory>65536</memory><os><type>hvm</type></os><metadata>${metadataXml(meta)}</metadata></domain>`,
    )
  ).free();
  const report = await cleanup(conn, { session, ownSessions: [session] });
  t.deepEqual(report.volumes, [], JSON.stringify(report));
  t.deepEqual(report.domains, []);
  await pool.refresh();
  const left = [];
  for (const volume of await pool.volumes()) {
    left.push(volume.name);
    volume.free();
  }
  for (const name of volumes) t.true(left.includes(name), `${name} deleted`);
});

test('up with a session id another user’s domain holds is refused with VM_SESSION_TAKEN before anything', async (t) => {
  const conn = await Connection.open('test:///default');
  t.teardown(() => conn.close());
  const session = `taken-${process.pid}`;
  (await conn.defineDomain(domain(session, other))).free();
  const state = tempDir('devpivot-owner-state-');
  const error = await t.throwsAsync(
    openHost({ uri: 'test:///default', sessionId: session, bus: new EventBus(), stateDir: state, domainType: 'qemu' }),
  );
  t.is((error as DevpivotError).code as string, 'VM_SESSION_TAKEN', error?.message);
  t.regex(error?.message ?? '', /another user/);
  t.false(existsSync(join(state, 'sessions', session)), 'the session was recorded');
  // The caller's own session id is not refused.
  const mine = `free-${process.pid}`;
  (await conn.defineDomain(domain(mine, me))).free();
  const host = await openHost({
    uri: 'test:///default',
    sessionId: mine,
    bus: new EventBus(),
    stateDir: state,
    domainType: 'qemu',
  });
  await host.close();
});
