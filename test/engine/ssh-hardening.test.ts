/**
 * ssh command lines cannot be turned into options: a `qemu+ssh://` host that starts with `-` (`-oProxyCommand=…`
 * ran a local command through libvirt's and devpivot's ssh) is refused, `--` comes before every destination, and
 * node ssh learns a node's key at first contact and refuses a changed one (accept-new, per-session known_hosts).
 */
import test from 'ava';
import { sshArgs } from '../../src/engine/ssh.js';
import { remoteCommandArgs } from '../../src/vm/remote/remote-command.js';
import { sshDestinationOf } from '../../src/vm/remote/ssh-destination.js';

test('a qemu+ssh host that starts with - is refused with a typed error', (t) => {
  const error = t.throws(() => sshDestinationOf('qemu+ssh://-oProxyCommand=touch%20%2Ftmp%2Fpwned/system'));
  t.is((error as { code?: string }).code, 'REMOTE_HOST_INVALID', error?.message);
  t.is(sshDestinationOf('qemu+ssh://ada@host.example/system')?.host, 'host.example');
});

test('-- comes before the destination of every ssh command line', (t) => {
  const destination = { host: 'host.example', user: 'ada', noVerify: false };
  const remote = remoteCommandArgs(destination, ['true']);
  t.is(remote[remote.indexOf('host.example') - 1], '--', remote.join(' '));
  const node = sshArgs(
    { session: { key: '/k', knownHosts: '/kh' }, alias: 'n1', port: 2222, via: destination } as never,
    { command: ['uname', '-a'] },
  );
  const at = node.indexOf('core@127.0.0.1');
  t.true(at > 0 && node[at - 1] === '--', node.join(' '));
  t.deepEqual(node.slice(at + 1), ['uname', '-a']);
  t.regex(node.join(' '), /ProxyCommand=.* -- host\.example/);
});

test('node ssh: a per-session known_hosts, keys learnt at first contact, a changed key refused', (t) => {
  const node = sshArgs({
    session: { key: '/k', knownHosts: '/state/s/ssh/known_hosts' },
    alias: 'n1',
    port: 2222,
  } as never);
  t.true(node.includes('UserKnownHostsFile=/state/s/ssh/known_hosts'));
  t.true(node.includes('StrictHostKeyChecking=accept-new'), node.join(' '));
  t.false(node.includes('StrictHostKeyChecking=no'));
});
