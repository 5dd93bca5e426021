import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { UsageError } from '../../src/core/errors.js';
import {
  assertValidSessionId,
  consoleLogPath,
  lastSession,
  listSessions,
  newSessionId,
  recordSession,
} from '../../src/vm/sessions.js';
import { formatUptime, resolveTarget, sessionWithLog } from '../../src/vm/targets.js';
import { tempDir } from '../helpers/temp.js';

test('sessions are recorded and the newest is the last one; broken records are skipped', async (t) => {
  const dir = tempDir('devpivot-sessions-');
  t.is(await lastSession(dir), undefined);
  await recordSession(dir, { id: 'a1', uri: 'qemu:///system', startedAt: '2026-01-01T00:00:00.000Z', pid: 1 });
  await recordSession(dir, { id: 'b2', uri: 'qemu+tcp://h/system', startedAt: '2026-01-02T00:00:00.000Z', pid: 2 });
  mkdirSync(join(dir, 'sessions', 'junk'));
  writeFileSync(join(dir, 'sessions', 'junk', 'session.json'), '{not json');
  t.deepEqual(
    (await listSessions(dir)).map((s) => s.id),
    ['b2', 'a1'],
  );
  t.is((await lastSession(dir))?.id, 'b2');
});

test('the target URI: --connect, then LIBVIRT_DEFAULT_URI, then the session’s, then the default', async (t) => {
  const dir = tempDir('devpivot-sessions-');
  await recordSession(dir, {
    id: 's1',
    uri: 'qemu+tcp://remote/system',
    startedAt: '2026-01-01T00:00:00.000Z',
    pid: 1,
  });
  t.is((await resolveTarget({ connect: 'test:///default', env: {}, stateDir: dir })).uri, 'test:///default');
  t.is(
    (await resolveTarget({ env: { LIBVIRT_DEFAULT_URI: 'qemu:///session' }, stateDir: dir })).uri,
    'qemu:///session',
  );
  const last = await resolveTarget({ env: {}, stateDir: dir });
  t.is(last.uri, 'qemu+tcp://remote/system');
  t.is(last.session?.id, 's1');
  const unknown = await resolveTarget({ session: 'other', env: {}, stateDir: dir });
  t.is(unknown.session?.id, 'other');
});

test('logs without --session pick the newest session that has a log for the node', async (t) => {
  const dir = tempDir('devpivot-sessions-');
  await recordSession(dir, { id: 'old', uri: 'u', startedAt: '2026-01-01T00:00:00.000Z', pid: 1 });
  await recordSession(dir, { id: 'new', uri: 'u', startedAt: '2026-01-02T00:00:00.000Z', pid: 1 });
  writeFileSync(consoleLogPath(dir, 'old', 'node1'), 'x\n');
  t.is((await sessionWithLog(dir, 'node1'))?.id, 'old');
  t.is(await sessionWithLog(dir, 'node2'), undefined);
});

test('session ids', (t) => {
  t.regex(newSessionId(), /^[0-9a-f]{8}$/);
  t.notThrows(() => assertValidSessionId('ci-42'));
  t.throws(() => assertValidSessionId('a--b'), { instanceOf: UsageError });
  t.throws(() => assertValidSessionId('../x'), { instanceOf: UsageError });
});

test('uptimes: the two largest units', (t) => {
  t.is(formatUptime(4_000), '4s');
  t.is(formatUptime(192_000), '3m12s');
  t.is(formatUptime(2 * 3600_000 + 5 * 60_000), '2h05m');
  t.is(formatUptime(4 * 86400_000 + 3 * 3600_000), '4d03h');
});
