/**
 * The session's ssh key (real ssh-keygen), the ssh command line, known_hosts handling, and the pivot request
 * scripts. ssh against a real sshd: the fixture's, in test/e2e/multi-hop.vm.test.ts.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import {
  ensureSessionKey,
  forgetHostKey,
  readSessionKey,
  removeSessionKey,
  sessionSshDir,
  sshArgs,
} from '../../src/engine/ssh.js';
import { AS_ROOT, pivotRequestScript, REBOOT_MARKER } from '../../src/engine/ssh-pivot.js';
import { tempDir } from '../helpers/temp.js';

const state = () => tempDir('devpivot-ssh-test-');

test('one ed25519 key pair per session, private to its owner, kept in the session directory, removed with it', async (t) => {
  const dir = state();
  t.is(await readSessionKey(dir, 's1'), undefined);
  const key = await ensureSessionKey(dir, 's1');
  t.is(key.key, join(sessionSshDir(dir, 's1'), 'id_ed25519'));
  t.regex(key.publicKey, /^ssh-ed25519 AAAA\S+ devpivot-s1$/);
  t.is(statSync(key.key).mode & 0o777, 0o600);
  t.is(statSync(sessionSshDir(dir, 's1')).mode & 0o777, 0o700);
  t.deepEqual(await ensureSessionKey(dir, 's1'), key, 'made once');
  t.deepEqual(await readSessionKey(dir, 's1'), key);
  t.not((await ensureSessionKey(dir, 's2')).publicKey, key.publicKey, 'each session its own');
  await removeSessionKey(dir, 's1');
  t.false(existsSync(key.key));
  t.is(await readSessionKey(dir, 's1'), undefined);
});

test('the ssh command line: the session key only, its own known_hosts under the domain name, core@127.0.0.1', (t) => {
  const session = { key: '/s/id_ed25519', publicKey: 'k', knownHosts: '/s/known_hosts' };
  const args = sshArgs({ session, alias: 'devpivot-s1-node1', port: 40022 }, { command: ['cat', '/etc/os-release'] });
  const options = args.flatMap((arg, i) => (args[i - 1] === '-o' ? [arg] : []));
  t.true(args.includes('-F') && args[args.indexOf('-F') + 1] === '/dev/null', "the user's ssh config is left out");
  t.is(args[args.indexOf('-i') + 1], '/s/id_ed25519');
  t.is(args[args.indexOf('-p') + 1], '40022');
  for (const option of [
    'IdentitiesOnly=yes',
    'IdentityAgent=none',
    'UserKnownHostsFile=/s/known_hosts',
    'GlobalKnownHostsFile=/dev/null',
    'StrictHostKeyChecking=accept-new',
    'HostKeyAlias=devpivot-s1-node1',
  ])
    t.true(options.includes(option), option);
  t.deepEqual(args.slice(-4), ['--', 'core@127.0.0.1', 'cat', '/etc/os-release']);
  const batch = sshArgs({ session, alias: 'a', port: 1 }, { batch: true, tty: false });
  t.true(batch.includes('BatchMode=yes'));
  t.true(batch.includes('-T'));
  t.is(batch.at(-1), 'core@127.0.0.1', 'no command: a login');
});

test('a node created again forgets its old host key, and only its own', async (t) => {
  const key = await ensureSessionKey(state(), 's1');
  writeFileSync(key.knownHosts, 'devpivot-s1-a ssh-ed25519 AAAA1\ndevpivot-s1-b ssh-ed25519 AAAA2\n');
  await forgetHostKey(key, 'devpivot-s1-a');
  t.is(readFileSync(key.knownHosts, 'utf8'), 'devpivot-s1-b ssh-ed25519 AAAA2\n');
  await forgetHostKey({ ...key, knownHosts: '/nonexistent/known_hosts' }, 'x');
});

test('the legacy pivot request is what the MCD did for a second request, then the reboot when staged', (t) => {
  const script = pivotRequestScript('legacy', "10.0.2.2:5000/devpivot/v3@sha256:abc'd", 'v3');
  const lines = script.split('\n');
  t.is(lines[0], 'set -e');
  t.true(lines.includes(`printf '%s' '10.0.2.2:5000/devpivot/v3@sha256:abc'\\''d' > /etc/pivot/image-pullspec`));
  const order = ['/etc/pivot/image-pullspec', 'rm -f /run/pivot/reboot-needed', 'systemctl start pivot.service'];
  const at = order.map((part) => lines.findIndex((line) => line.includes(part)));
  t.deepEqual(
    [...at].sort((a, b) => a - b),
    at,
    'pullspec, then reboot-needed removed, then the unit',
  );
  t.true(at.every((i) => i > 0));
  t.regex(script, /if \[ -e \/run\/ostree\/staged-deployment \]; then\n {2}echo 'devpivot: rebooting/);
  t.true(script.includes(REBOOT_MARKER));
  t.regex(script, /systemd-run --unit machine-config-daemon-reboot --description '[^']*v3[^']*' reboot/);
  t.regex(
    pivotRequestScript('rpm-ostree', 'r@sha256:1', 'x'),
    /rpm-ostree rebase --experimental 'ostree-unverified-registry:r@sha256:1'/,
  );
  t.regex(pivotRequestScript('bootc', 'r@sha256:1', 'x'), /bootc switch 'r@sha256:1'/);
  t.is(AS_ROOT, 'if [ "$(id -u)" -eq 0 ]; then exec sh -s; else exec sudo -n sh -s; fi');
});
