/**
 * Two users on one shared libvirt daemon (issue 28 item 1), as root and as an unprivileged user, with real
 * processes (domains defined, never started: nothing boots). The daemon is a private libvirtd both reach over TCP
 * (test/vm/daemon.ts), standing in for qemu:///system: a non-root user opens qemu:///system through polkit, which
 * needs the system D-Bus, and this machine (a container) has none. Ownership is the uid each devpivot records. The user holds session S;
 * root, with S in its own records (it ran S once), is refused S for `up`, does not see the user's domain in `ps`,
 * and its `down --session S` leaves the user's domain and volumes alone; the user's `down --all` leaves root's
 * session alone; each `down` removes its own.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { recordSession } from '../../src/vm/sessions.js';
import { binPath, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { ensureTestUser, privateHome, runAsUser } from '../helpers/unprivileged-user.js';
import { startTestDaemon } from './daemon.js';

let URI = '';
const actor = fileURLToPath(new URL('./two-users-actor.js', import.meta.url));

function virsh(...args: string[]): string {
  const result = spawnSync('virsh', ['-c', URI, ...args], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout : '';
}
const domainExists = (name: string) => virsh('domstate', name) !== '';
const volumes = (session: string) =>
  virsh('vol-list', 'devpivot')
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name.startsWith(`devpivot-${session}--`));

test('two users, one session name: each sees and removes only its own objects', async (t) => {
  const daemon = await startTestDaemon();
  t.teardown(() => daemon.dispose());
  URI = daemon.tcpUri;
  const pool = daemon.poolPath;
  const user = ensureTestUser();
  const { home, remove } = privateHome(user);
  t.teardown(remove);
  const work = tempDir('devpivot-two-users-');
  chmodSync(work, 0o755);
  const image = join(work, 'base.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', image, '16M']);
  chmodSync(image, 0o644);
  const S = `two-${process.pid}`;
  const R = `root-${process.pid}`;
  const userState = join(home, 'state');
  const userEnv = { HOME: home, DEVPIVOT_STATE_DIR: userState, LIBVIRT_DEFAULT_URI: URI };
  const rootState = join(work, 'root-state');
  mkdirSync(rootState);
  const rootEnv = { DEVPIVOT_STATE_DIR: rootState, LIBVIRT_DEFAULT_URI: URI };
  t.teardown(() => {
    // Whatever a failed assertion left: each side's own down.
    runAsUser(user, userEnv, process.execPath, [binPath, 'down', '--session', S]);
    spawnSync(process.execPath, [binPath, 'down', '--session', R], { env: { ...process.env, ...rootEnv } });
  });

  const made = runAsUser(user, userEnv, process.execPath, [actor, URI, S, userState, image, pool], {
    timeoutMs: 120_000,
  });
  t.is(made.status, 0, made.stdout + made.stderr);
  const theirs = `devpivot-${S}-node1`;
  t.true(domainExists(theirs));
  const theirVolumes = volumes(S);
  t.true(theirVolumes.length >= 2, theirVolumes.join(' '));

  // Root picks the same name: refused before anything is created.
  const refused = spawnSync(process.execPath, [actor, URI, S, rootState, image, pool], { encoding: 'utf8' });
  t.is(refused.status, 3, refused.stdout + refused.stderr);
  t.regex(refused.stdout, /VM_SESSION_TAKEN/);
  // Root's own session under another name.
  const own = spawnSync(process.execPath, [actor, URI, R, rootState, image, pool], { encoding: 'utf8' });
  t.is(own.status, 0, own.stdout + own.stderr);

  // Root once ran S: its records name S. Its ps and down --session S still leave the user's objects alone.
  await recordSession(rootState, { id: S, uri: URI, startedAt: new Date().toISOString(), pid: 1 });
  const rootPs = await runCli(['ps', '--json'], { env: rootEnv });
  t.is(rootPs.code, 0, rootPs.stderr);
  t.false(rootPs.stdout.includes(theirs), 'root sees the user’s domain');
  t.true(rootPs.stdout.includes(`devpivot-${R}-node1`));
  const rootDown = await runCli(['down', '--session', S], { env: rootEnv });
  t.true(domainExists(theirs), rootDown.stdout + rootDown.stderr);
  t.deepEqual(volumes(S), theirVolumes, 'root’s down deleted the user’s volumes');

  // The user: sees only its own, and its down --all leaves root's session alone.
  const userPs = runAsUser(user, userEnv, process.execPath, [binPath, 'ps', '--json']);
  t.is(userPs.status, 0, userPs.stderr);
  t.true(userPs.stdout.includes(theirs));
  t.false(userPs.stdout.includes(`devpivot-${R}-node1`), 'the user sees root’s domain');
  const userDown = runAsUser(user, userEnv, process.execPath, [binPath, 'down', '--all'], { timeoutMs: 120_000 });
  t.is(userDown.status, 0, userDown.stdout + userDown.stderr);
  t.false(domainExists(theirs));
  t.deepEqual(volumes(S), []);
  t.true(domainExists(`devpivot-${R}-node1`), 'the user’s down --all removed root’s domain');

  const rootOwnDown = await runCli(['down', '--session', R], { env: rootEnv });
  t.is(rootOwnDown.code, 0, rootOwnDown.stderr);
  t.false(domainExists(`devpivot-${R}-node1`));
  t.deepEqual(volumes(R), []);
});
