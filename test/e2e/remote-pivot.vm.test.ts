/**
 * A pivot on "another" libvirt host over qemu+ssh (docs/ARCHITECTURE.md "Remote hosts"): devpivot connects to
 * libvirt through a real key-only sshd on 127.0.0.1 (test/helpers/sshd.ts, libvirt's ssh transport running
 * virt-ssh-helper), and reaches the guest's 10.0.2.2 only through its ssh tunnel: the registry's ports on ports sshd
 * chose there (never the local ones), the guest filter's sockets on forwarded unix sockets. The VM is on this
 * machine, so the test checks that nothing the guest was given names a local port: the pivot can only pass through
 * the tunnel. An `ssh` step, then `devpivot ssh` on the kept node, reach it through the remote login (ProxyCommand).
 * One node, ~4 min.
 */
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Stamped } from '../../src/core/events.js';
import { processAlive } from '../../src/core/process-alive.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { startSshd } from '../helpers/sshd.js';
import { tempDir } from '../helpers/temp.js';
import { bootedVersions, leftoverDomains, runScenarioCli, session } from './run-scenario.js';

/**
 * libvirt's ssh transport records the test sshd's host key in the user's ~/.ssh/known_hosts even with no_verify=1
 * (it only turns StrictHostKeyChecking off); drop that one entry again, plain or hashed (`|1|salt|HMAC-SHA1`).
 */
function forgetKnownHost(host: string): void {
  const file = join(homedir(), '.ssh', 'known_hosts');
  if (!existsSync(file)) return;
  const matches = (pattern: string) => {
    const hashed = /^\|1\|([^|]+)\|(.+)$/.exec(pattern);
    if (!hashed) return pattern.split(',').includes(host);
    const mac = createHmac('sha1', Buffer.from(hashed[1]!, 'base64')).update(host).digest('base64');
    return mac === hashed[2];
  };
  const lines = readFileSync(file, 'utf8').split('\n');
  const kept = lines.filter((line) => !matches(line.split(' ')[0] ?? ''));
  if (kept.length !== lines.length) writeFileSync(file, kept.join('\n'));
}

const logs = (events: Stamped[]) => events.flatMap((e) => (e.kind === 'log' ? [e.message] : []));

test.serial(
  'remote-pivot: over qemu+ssh, the guest pulls through the tunnel on remote ports and ssh reaches it',
  async (t) => {
    const sshd = await startSshd();
    t.teardown(() => sshd.stop());
    t.teardown(() => forgetKnownHost(`[127.0.0.1]:${sshd.port}`));
    const dir = tempDir('devpivot-remote-pivot-', t);
    const file = join(dir, 'remote-pivot.yaml');
    writeFileSync(
      file,
      `name: remote-pivot
nodes:
  node1:
    image: fixture:1
    pivot: fixture:2
steps:
  - up
  - expect: { event: pivot.staged, within: 6m }
  - expect: { booted: fixture:2, within: 5m }
  - ssh: { run: 'grep ^VERSION= /etc/os-release', expect: 'VERSION="2"', within: 3m }
`,
    );
    const uri = sshd.uri();
    // --keep: once the run ended, the node stays (served by the run's process) for `devpivot ssh`, then SIGTERM
    // ends the serving and removes it.
    let login: Promise<CliResult> | undefined;
    const run = await runScenarioCli('remote-pivot', {
      file,
      extraArgs: ['--connect', uri, '--keep'],
      onEvent: (event, kill) => {
        if (event.kind !== 'run.end') return;
        const args = ['ssh', 'node1', '--session', session('remote-pivot'), '--connect', uri];
        login = runCli([...args, '--', 'grep', '^VERSION=', '/etc/os-release'], { timeoutMs: 120_000 });
        void login.finally(() => kill('SIGTERM'));
      },
    });
    const ssh = await login;
    t.is(ssh?.code, 0, ssh?.stderr);
    t.is(ssh?.stdout.trim(), 'VERSION="2"', 'devpivot ssh reached the kept node through the remote login');
    t.is(run.code, 0, `${run.steps.join('\n')}\n${logs(run.events).join('\n')}\n${run.stderr}`);
    t.deepEqual(run.steps.slice(0, 4), [
      '✓ prepare',
      '✓ up',
      '✓ expect node1 pivot.staged within 6m',
      '✓ expect node1 booted fixture:2 within 5m',
    ]);
    t.regex(
      run.steps[4] ?? '',
      /^✓ ssh node1 'grep \^VERSION= \/etc\/os-release'/,
      'ssh reached the node through the remote login',
    );
    t.deepEqual(bootedVersions(run.events), ['1', '2']);

    // The tunnel: the registry's main port and node1's port, each on a port sshd chose.
    const line = logs(run.events).find((message) => message.startsWith('remote host '));
    const match = /ssh tunnel \(pid (\d+)\) forwards (.*); guest network sockets in (\S+)$/.exec(line ?? '');
    t.truthy(match, `the tunnel's log line: ${line}`);
    const [, pid, forwards, socketDir] = match!;
    const pairs = [...forwards!.matchAll(/127\.0\.0\.1:(\d+) as 127\.0\.0\.1:(\d+)/g)].map((m) => [
      Number(m[1]),
      Number(m[2]),
    ]);
    const remote = new Map(pairs.map(([local, there]) => [local!, there!]));
    t.is(remote.size, 2, forwards);
    const locals = new Set(remote.keys());
    for (const [local, there] of remote) t.false(locals.has(there), `remote port ${there} is no local port (${local})`);
    const listening = run.events.find((e) => e.kind === 'registry.listening');
    const mainPort = Number(new URL(listening && 'url' in listening ? listening.url : 'http://x:1').port);
    t.true(remote.has(mainPort), 'the main port is forwarded');
    const [nodeLocal, nodeRemote] = [...remote].find(([local]) => local !== mainPort)!;

    // What the guest was told names the remote port only: its pivot target (from its Ignition) is 10.0.2.2:REMOTE.
    const pivot = run.events.find((e) => e.kind === 'guest.pivot');
    const target = pivot && 'target' in pivot ? pivot.target : '';
    t.regex(target, new RegExp(`^10\\.0\\.2\\.2:${nodeRemote}/devpivot/fixture-2@sha256:[0-9a-f]{64}$`));
    t.false(target.includes(`:${nodeLocal}/`));
    // ... and its requests arrived on node1's local port (attributed to it), so they went through the tunnel.
    const pulls = run.events.filter((e) => e.kind === 'registry.request' && 'node' in e && e.node === 'node1');
    t.true(pulls.length > 0, 'node1 reached the registry');
    t.true(
      run.events.some((e) => e.kind === 'blob.progress' && e.sent === e.total && e.total > 1_000_000),
      'the layer was pulled',
    );
    // The filter (reached over the forwarded sockets) refused nothing on 10.0.2.2 (it drops IPv6 as always).
    t.deepEqual(
      logs(run.events).filter((message) => message.includes('blocked') && message.includes('10.0.2.2')),
      [],
    );

    // After the run: the tunnel's ssh has ended and the socket directory on the remote host is gone.
    t.false(processAlive(Number(pid)), `ssh ${pid} ended`);
    t.false(existsSync(socketDir!), `${socketDir} removed`);
    t.deepEqual(leftoverDomains('remote-pivot'), []);
  },
);
