/**
 * A run on a remote libvirt host (docs/ARCHITECTURE.md "Remote hosts"), the engine with fake VMs against a real
 * key-only sshd on 127.0.0.1 playing the remote host: the guests are told the tunnel's remote ports only (never a
 * local one), QEMU is given the forwarded sockets, and a stand-in QEMU on those sockets reaches devpivot's filter
 * through ssh, which passes the node's remote port and refuses its local one. Cleanup ends ssh and removes the
 * remote directory. Other remote transports fail before anything starts; the ProxyCommand that reaches a node on
 * a remote host logs in through a real sshd, even with a keyfile path that needs quoting (a space, a quote).
 */
import { copyFileSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import { DevpivotError } from '../../src/core/errors.js';
import type { Stamped } from '../../src/core/events.js';
import { run } from '../../src/core/exec.js';
import { processAlive } from '../../src/core/process-alive.js';
import { remoteDestination, remoteGuestAddress } from '../../src/engine/remote-host.js';
import { sshArgs } from '../../src/engine/ssh.js';
import { startSshd, type TestSshd } from '../helpers/sshd.js';
import { tempDir } from '../helpers/temp.js';
import { qemuSide, SYN, tcp } from '../vm/frames.js';
import { fakeDeps, runFakeScenario } from './fake.js';

const MAIN = 45678;
let sshd: TestSshd;

test.before(async () => {
  sshd = await startSshd();
});
test.after.always(async () => {
  await sshd?.stop();
});

test.serial('guests learn the remote ports only; their filter, reached through ssh, passes only those', async (t) => {
  const seen: { fromGuestPath?: string; passed?: number[]; resets?: number; socketMode?: number; error?: string } = {};
  const world = fakeDeps({
    async onBoot(node, boot) {
      if (boot !== 1) return false;
      try {
        const filter = node.spec.network?.filter;
        if (!filter) throw new Error('no guest filter');
        seen.fromGuestPath = filter.fromGuest;
        seen.socketMode = statSync(filter.fromGuest).mode & 0o777;
        const qemu = await qemuSide({ sockets: filter });
        await new Promise((resolve) => setTimeout(resolve, 300)); // ssh connects its local ends
        // The port its Ignition names.
        const remotePort = Number(world.ignition[0]?.registry.hostPort.split(':')[1]);
        qemu.send(tcp('10.0.2.2', 40000, remotePort, SYN), tcp('10.0.2.2', 40001, MAIN + 1, SYN));
        await new Promise((resolve) => setTimeout(resolve, 500));
        seen.passed = qemu.host.map((frame) => frame.readUInt16BE(14 + 20 + 2));
        seen.resets = qemu.guest.length;
        qemu.close();
      } catch (error) {
        seen.error = (error as Error).message;
      }
      return false;
    },
  });
  const bus = new EventBus();
  const events: Stamped[] = [];
  bus.subscribe((event) => events.push(event));
  const result = await runFakeScenario(
    world,
    `nodes:
  a: { pivot: fixture:2 }
steps:
  - up
  - expect: { node: a, booted: fixture:2, within: 10s }
`,
    { bus, uri: sshd.uri() },
  );
  const logs = events.flatMap((e) => (e.kind === 'log' ? [e.message] : []));
  t.true(result.ok, logs.join('\n'));
  const line = logs.find((m) => m.startsWith('remote host '))!;
  const remote = new Map(
    [...line.matchAll(/127\.0\.0\.1:(\d+) as 127\.0\.0\.1:(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]),
  );
  t.deepEqual([...remote.keys()].sort(), [MAIN, MAIN + 1], 'the main port and node a’s');
  const nodeRemote = remote.get(MAIN + 1)!;
  t.false([MAIN, MAIN + 1].includes(nodeRemote));
  const [ignition] = world.ignition;
  t.is(ignition?.image, `10.0.2.2:${nodeRemote}/devpivot/fixture-2@sha256:${'2'.repeat(64)}`);
  t.deepEqual(ignition?.registry, { hostPort: `10.0.2.2:${nodeRemote}`, insecure: true });
  t.false(JSON.stringify(ignition).includes(`:${MAIN + 1}`), 'the Ignition never names a local port');
  t.is(seen.error, undefined);
  const socketDir = /guest network sockets in (\S+)$/.exec(line)?.[1] ?? '';
  t.true(seen.fromGuestPath?.startsWith(`${socketDir}/`), `QEMU is given the forwarded socket ${seen.fromGuestPath}`);
  t.is(seen.socketMode, 0o666, 'opened for QEMU’s user');
  t.deepEqual(seen.passed, [nodeRemote], 'the remote port passes the filter');
  t.is(seen.resets, 1, 'the local port gets a reset');
  const pid = Number(/pid (\d+)/.exec(line)?.[1]);
  t.false(processAlive(pid), 'cleanup ended ssh');
  t.false(existsSync(socketDir), 'and removed the socket directory there');
});

test('remote transports other than ssh fail early, naming the fix; loopback and local ones need no tunnel', (t) => {
  const error = t.throws(() => remoteDestination('qemu+tcp://build.example/system'), { instanceOf: DevpivotError });
  t.is(error?.code, 'REMOTE_TRANSPORT_UNSUPPORTED');
  t.regex(error?.message ?? '', /build\.example/);
  t.regex(error?.hint ?? '', /qemu\+ssh:\/\/USER@build\.example\/system/);
  for (const uri of [undefined, 'qemu:///system', 'qemu+unix:///system', 'qemu+tcp://127.0.0.1:16509/system'])
    t.is(remoteDestination(uri), undefined, String(uri));
  t.like(remoteDestination('qemu+ssh://core@host:2222/system'), { host: 'host', user: 'core', port: 2222 });
});

test('a guest address is rewritten to the remote port of its local port, anything else is kept', (t) => {
  const ports = new Map([[5000, 41000]]);
  t.is(remoteGuestAddress('10.0.2.2:5000', ports), '10.0.2.2:41000');
  t.is(remoteGuestAddress('10.0.2.2:5001', ports), '10.0.2.2:5001');
  t.is(remoteGuestAddress('registry.example:5000', ports), 'registry.example:5000');
});

test.serial(
  'ssh reaches a port on the remote loopback through ProxyCommand, with a keyfile path that needs quoting (a space, a quote)',
  async (t) => {
    const base = tempDir('devpivot-proxy-', t);
    const dir = join(base, "it's a key dir");
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dir);
    const keyfile = join(dir, 'key');
    copyFileSync(sshd.keyfile, keyfile);
    const via = remoteDestination(`qemu+ssh://${sshd.user}@127.0.0.1:${sshd.port}/system?no_verify=1`)!;
    const args = sshArgs(
      {
        session: { key: sshd.keyfile, publicKey: '', knownHosts: join(base, 'known_hosts') },
        alias: 'node-behind',
        port: sshd.port, // the "node": here the sshd itself, on the remote host's loopback
        user: sshd.user,
        via: { ...via, keyfile },
      },
      { command: ['echo', 'through-the-proxy'], batch: true },
    );
    const result = await run('ssh', args, { timeoutMs: 20_000 });
    t.is(result.code, 0, result.all);
    t.is(result.stdout.trim(), 'through-the-proxy');
  },
);

test.serial('the tunnel ending mid-run fails the run at once with SSH_TUNNEL_FAILED, not at a deadline', async (t) => {
  let pid = 0;
  const world = fakeDeps({
    onBoot(_node, boot) {
      if (boot === 1) process.kill(pid, 'SIGTERM'); // the connection to the remote host drops
      return true; // the guest then waits forever: only the tunnel's end can fail the run early
    },
  });
  const bus = new EventBus();
  const messages: string[] = [];
  bus.subscribe((event) => {
    if (event.kind === 'log') {
      messages.push(event.message);
      pid ||= Number(/ssh tunnel \(pid (\d+)\)/.exec(event.message)?.[1] ?? 0);
    }
  });
  const started = Date.now();
  const result = await runFakeScenario(
    world,
    `nodes:
  a: { pivot: fixture:2 }
steps:
  - up
  - expect: { node: a, booted: fixture:2, within: 2m }
`,
    { bus, uri: sshd.uri() },
  );
  t.false(result.ok);
  t.true(pid > 0, messages.join('\n'));
  t.true(Date.now() - started < 30_000, 'long before the step’s 2 minutes');
  const failed = result.steps.find((step) => step.status === 'failed');
  t.regex(failed?.error ?? '', /the ssh tunnel to .*127\.0\.0\.1 ended during the run/);
  t.is(result.exitCode, 1);
});

test('a run on another host over qemu+tcp stops before anything starts: exit status 2, no registry', async (t) => {
  const world = fakeDeps();
  const result = await runFakeScenario(world, 'nodes:\n  a: { pivot: fixture:2 }\nsteps: [up]\n', {
    uri: 'qemu+tcp://build.example/system',
  });
  t.false(result.ok);
  t.is(result.exitCode, 2);
  t.regex(result.steps[0]?.error ?? '', /only an ssh transport can carry a tunnel.*qemu\+ssh:\/\/USER@build\.example/);
  t.is(world.registry, undefined, 'the registry never started');
  t.is(world.host, undefined);
});
