/**
 * Nodes' ssh host keys (src/engine/host-keys.ts): made by the real ssh-keygen, pinned in the session's known_hosts,
 * and checked by the real ssh client against a real sshd serving them (test/helpers/sshd.ts) on 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { HOST_KEY_TYPES, hostKeyPath, makeHostKeys, writesHostKeys } from '../../src/engine/host-keys.js';
import { knowsHostKeys, pinHostKeys, runOverSsh, type SessionKey, SSH_FAILED } from '../../src/engine/ssh.js';
import { slowTool, stopSoon, withPathFirst } from '../helpers/slow-tool.js';
import { startSshd } from '../helpers/sshd.js';
import { tempDir } from '../helpers/temp.js';

test('one key per type sshd-keygen makes, each private key the public one it names; the work files are gone', async (t) => {
  const parent = tempDir('devpivot-keywork-');
  const [first, second] = await Promise.all([makeHostKeys(parent), makeHostKeys(parent)]);
  t.deepEqual(
    first!.map((key) => key.type),
    [...HOST_KEY_TYPES],
  );
  const dir = tempDir('devpivot-keycheck-');
  for (const key of first!) {
    t.regex(key.publicKey, /^(ssh-rsa|ecdsa-sha2-nistp256|ssh-ed25519) AAAA[A-Za-z0-9+/=]+$/, key.type);
    const file = join(dir, key.type);
    writeFileSync(file, key.privateKey, { mode: 0o600 });
    // ssh-keygen -y: the public key the private one derives
    t.is(execFileSync('ssh-keygen', ['-y', '-f', file], { encoding: 'utf8' }).trim(), key.publicKey, key.type);
  }
  t.is(hostKeyPath('ecdsa'), '/etc/ssh/ssh_host_ecdsa_key');
  t.notDeepEqual(
    second!.map((key) => key.publicKey),
    first!.map((key) => key.publicKey),
    'new keys each call',
  );
  t.deepEqual(readdirSync(parent), [], 'no private key is left in a work directory');
});

test.serial(
  'stopped (Ctrl-C during prepare): ssh-keygen is ended at once, the stop reason thrown, no work file left',
  async (t) => {
    // An ssh-keygen that does not finish within the test (a loaded host's RSA key, magnified): only stopping it
    // ends the making in time.
    t.timeout(10_000);
    await withPathFirst(slowTool('ssh-keygen'), async () => {
      const parent = tempDir('devpivot-keystop-');
      const making = makeHostKeys(parent, stopSoon());
      await t.throwsAsync(making, { message: 'interrupted by SIGINT' });
      t.deepEqual(readdirSync(parent), [], 'the work directory is removed');
    });
  },
);

test("a user's config that writes a host key replaces devpivot's", (t) => {
  t.true(writesHostKeys({ storage: { files: [{ path: '/etc/x' }, { path: '/etc/ssh/ssh_host_rsa_key' }] } }));
  t.true(writesHostKeys({ storage: { files: [{ path: '/etc/ssh/ssh_host_ed25519_key.pub' }] } }));
  t.false(writesHostKeys({ storage: { files: [{ path: '/etc/ssh/sshd_config.d/x.conf' }] } }));
  t.false(writesHostKeys({ storage: {} }));
  t.false(writesHostKeys(undefined));
});

test('pinned: ssh logs in to the sshd serving those keys and refuses one serving others; unpinned: learnt at first contact', async (t) => {
  const keys = await makeHostKeys();
  const sshd = await startSshd({ hostKeys: keys.map((key) => key.privateKey) });
  t.teardown(() => sshd.stop());
  const dir = tempDir('devpivot-pin-test-');
  const session: SessionKey = {
    key: sshd.keyfile,
    publicKey: readFileSync(`${sshd.keyfile}.pub`, 'utf8').trim(),
    knownHosts: join(dir, 'known_hosts'),
  };
  writeFileSync(session.knownHosts, 'other-node ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOTHER\n');
  const target = { session, alias: 'devpivot-s1-node1', port: sshd.port, user: sshd.user };
  const login = (pinned: boolean) => runOverSsh({ ...target, pinned }, 'echo in', { timeoutMs: 30_000 });

  await pinHostKeys(
    session,
    target.alias,
    keys.map((key) => key.publicKey),
  );
  const pinnedFile = readFileSync(session.knownHosts, 'utf8');
  t.is(pinnedFile.split('\n')[0], 'other-node ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOTHER', "another node's line kept");
  t.is(pinnedFile.split('\n').filter((line) => line.startsWith(`${target.alias} `)).length, 3);
  t.true(await knowsHostKeys(session, target.alias));
  t.deepEqual(await login(true), { code: 0, output: 'in\n' });

  // The same node name pinned to other keys (a node created with other keys, or a man in the middle): refused.
  const others = await makeHostKeys();
  await pinHostKeys(
    session,
    target.alias,
    others.map((key) => key.publicKey),
  );
  const refused = await login(true);
  t.is(refused.code, SSH_FAILED, refused.output);
  t.regex(refused.output, /host key|Host key verification failed/i);
  t.is(
    readFileSync(session.knownHosts, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith(`${target.alias} `)).length,
    3,
  );

  // Nothing on record for it: the key is learnt (accept-new), then known.
  writeFileSync(session.knownHosts, '');
  t.false(await knowsHostKeys(session, target.alias));
  t.deepEqual(await login(false), { code: 0, output: 'in\n' });
  t.true(await knowsHostKeys(session, target.alias));
});
