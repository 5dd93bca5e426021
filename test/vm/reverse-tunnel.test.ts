/**
 * The reverse tunnel a `qemu+ssh://` run opens (src/vm/remote/reverse-tunnel.ts), against a real sshd on
 * 127.0.0.1: each local port gets a remote port chosen by sshd (not the local one), a request to it reaches the
 * local server through ssh, close ends ssh and the port; a refused login or a refused forward fails with
 * SSH_TUNNEL_FAILED and ssh's own words, leaving no process.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { DevpivotError } from '../../src/core/errors.js';
import { processAlive } from '../../src/core/process-alive.js';
import { openReverseTunnel } from '../../src/vm/remote/reverse-tunnel.js';
import { sshDestinationOf } from '../../src/vm/remote/ssh-destination.js';
import { startSshd, type TestSshd } from '../helpers/sshd.js';
import { tempDir } from '../helpers/temp.js';

let sshd: TestSshd;
const servers: Server[] = [];

test.before(async () => {
  sshd = await startSshd();
});

test.after.always(async () => {
  await sshd?.stop();
  for (const server of servers) server.close();
});

async function serve(body: string): Promise<number> {
  const server = createServer((_req, res) => res.end(body));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

test.serial('two local ports reach the remote loopback on ports sshd chose; close ends them', async (t) => {
  const [a, b] = [await serve('registry'), await serve('node1 port')];
  const tunnel = await openReverseTunnel({ destination: sshDestinationOf(sshd.uri())!, localPorts: [a, b] });
  const [ra, rb] = [tunnel.remotePorts.get(a)!, tunnel.remotePorts.get(b)!];
  t.truthy(ra && rb, JSON.stringify([...tunnel.remotePorts]));
  t.true(ra !== a && rb !== b && ra !== rb, 'remote ports are the remote host’s choice');
  t.is(await (await fetch(`http://127.0.0.1:${ra}/v2/`)).text(), 'registry');
  t.is(await (await fetch(`http://127.0.0.1:${rb}/`)).text(), 'node1 port');
  await tunnel.close();
  t.false(processAlive(tunnel.pid), 'ssh ended');
  await t.throwsAsync(fetch(`http://127.0.0.1:${ra}/v2/`), undefined, 'the remote port is gone');
});

test.serial('a key sshd does not know: SSH_TUNNEL_FAILED with ssh’s reason, at once', async (t) => {
  const dir = tempDir('devpivot-tunnel-', t);
  const { execFileSync } = await import('node:child_process');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', `${dir}/other`]);
  const started = Date.now();
  const error = await t.throwsAsync(
    openReverseTunnel({ destination: sshDestinationOf(sshd.uri(`${dir}/other`))!, localPorts: [await serve('x')] }),
    { instanceOf: DevpivotError },
  );
  t.is(error.code, 'SSH_TUNNEL_FAILED');
  t.regex(error.message, /Permission denied \(publickey\)/);
  t.true(Date.now() - started < 15_000, 'not the 20 s timeout');
});

test.serial('an sshd that refuses forwarding: ssh exits (ExitOnForwardFailure) and the open fails', async (t) => {
  const strict = await startSshd({ allowForwarding: false });
  t.teardown(() => strict.stop());
  const error = await t.throwsAsync(
    openReverseTunnel({ destination: sshDestinationOf(strict.uri())!, localPorts: [await serve('x')] }),
    { instanceOf: DevpivotError },
  );
  t.is(error.code, 'SSH_TUNNEL_FAILED');
  t.regex(error.message, /remote port forwarding failed|ssh exited/i);
});

test('qemu+ssh URIs become ssh arguments; other transports have none', (t) => {
  t.deepEqual(sshDestinationOf('qemu+ssh://core@build.example:2222/system?keyfile=/k/id&no_verify=1'), {
    host: 'build.example',
    user: 'core',
    port: 2222,
    keyfile: '/k/id',
    noVerify: true,
  });
  t.deepEqual(sshDestinationOf('qemu+ssh://host/session'), { host: 'host', noVerify: false });
  for (const uri of ['qemu:///system', 'qemu+unix:///system', 'qemu+tcp://host/system', 'not a uri'])
    t.is(sshDestinationOf(uri), undefined, uri);
});

test.serial(
  'unix sockets too, on the same ssh: sshd listens on the remote path, each connection reaches the local one',
  async (t) => {
    const dir = tempDir('devpivot-tunnel-sock-', t);
    const { createServer: createNetServer, connect } = await import('node:net');
    const { statSync } = await import('node:fs');
    const local = `${dir}/local.sock`;
    const server = createNetServer((socket) => socket.end('filter side'));
    await new Promise<void>((resolve) => server.listen(local, resolve));
    t.teardown(() => server.close());
    const port = await serve('registry');
    const remote = `${dir}/remote.sock`;
    const tunnel = await openReverseTunnel({
      destination: sshDestinationOf(sshd.uri())!,
      localPorts: [port],
      sockets: [{ remote, local }],
    });
    t.true(tunnel.remotePorts.has(port));
    t.is(statSync(remote).mode & 0o777, 0o600, "sshd's StreamLocalBindMask (0177)");
    const reply = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(remote);
      socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    t.is(reply, 'filter side');
    await tunnel.close();
    t.false(processAlive(tunnel.pid));
  },
);

test.serial('a socket whose remote directory is missing: SSH_TUNNEL_FAILED naming the path', async (t) => {
  const dir = tempDir('devpivot-tunnel-sock-', t);
  const remote = `${dir}/missing/remote.sock`;
  const error = await t.throwsAsync(
    openReverseTunnel({
      destination: sshDestinationOf(sshd.uri())!,
      localPorts: [],
      sockets: [{ remote, local: `${dir}/local.sock` }],
    }),
    { instanceOf: DevpivotError },
  );
  t.is(error.code, 'SSH_TUNNEL_FAILED');
  t.regex(error.message, /remote port forwarding failed for listen path .*missing\/remote\.sock/);
});
