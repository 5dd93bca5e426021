/**
 * What devpivot keeps is its user's alone (issue 28 item 6): the state directory and a session's records (0700,
 * session.json 0600), and on the system daemon the Ignition volume (it holds keys): 0600 and owned by the user
 * qemu runs as, read from the daemon's capabilities, so qemu reads it and no other local user does.
 */
import { chmodSync, lstatSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { Connection } from '../../src/vm/libvirt/connection.js';
import { createDataVolume, ensurePool, qemuOwner } from '../../src/vm/libvirt/pool.js';
import { recordSession, sessionDir } from '../../src/vm/sessions.js';
import { volumeXml } from '../../src/vm/storage-xml.js';
import { tempDir } from '../helpers/temp.js';

const mode = (path: string) => lstatSync(path).mode & 0o777;

test('a session record: the state directory and the session folder 0700, session.json 0600', async (t) => {
  const previous = process.umask(0o022);
  t.teardown(() => process.umask(previous));
  const state = join(tempDir('devpivot-private-'), 'state');
  mkdirSync(state);
  chmodSync(state, 0o755);
  await recordSession(state, { id: 'ci-42', uri: 'qemu:///system', startedAt: new Date().toISOString(), pid: 1 });
  t.is(mode(state), 0o700);
  t.is(mode(sessionDir(state, 'ci-42')), 0o700);
  t.is(mode(join(sessionDir(state, 'ci-42'), 'session.json')), 0o600);
});

test('the qemu user is the DAC base label of the capabilities; the volume XML asks for it', (t) => {
  const caps =
    '<secmodel><model>none</model><doi>0</doi></secmodel>' +
    "<secmodel><model>dac</model><doi>0</doi><baselabel type='kvm'>+64055:+994</baselabel></secmodel>";
  t.deepEqual(qemuOwner(caps), { uid: 64055, gid: 994 });
  t.is(qemuOwner('<secmodel><model>none</model></secmodel>'), undefined);
  t.regex(
    volumeXml({ name: 'v', capacity: 1, format: 'raw', mode: '0600', owner: { uid: 64055, gid: 994 } }),
    /<permissions><mode>0600<\/mode><owner>64055<\/owner><group>994<\/group><\/permissions>/,
  );
});

test('on qemu:///system the Ignition volume is 0600 and owned by the qemu user (real daemon)', async (t) => {
  const conn = await Connection.open('qemu:///system');
  t.teardown(() => conn.close());
  const owner = qemuOwner(await conn.capabilities());
  t.truthy(owner, 'the system daemon has a DAC base label');
  const { pool } = await ensurePool(conn);
  const name = `devpivot-test-private-${process.pid}.ign`;
  const path = await createDataVolume(conn, pool, name, Buffer.from('{"ignition":{"version":"3.4.0"}}'));
  t.teardown(async () => {
    const volume = await pool.lookupVolume(name);
    await volume?.delete();
    volume?.free();
    pool.free();
  });
  const info = lstatSync(path);
  t.is(info.mode & 0o777, 0o600);
  t.is(info.uid, owner!.uid);
  t.is(info.gid, owner!.gid);
});
