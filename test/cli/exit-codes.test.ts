/**
 * The exit status contract, one test per row that needs no VM (0 and 1 are in exit-codes.vm.test.ts), and the
 * process ending for every way a run can end: a set-up error in prepare (libvirt unreachable, a missing tool),
 * a tiny timeout, SIGINT and SIGTERM during prepare, and a second SIGINT while the first one's cleanup waits for
 * a libvirt connect that never answers. Every server here listens on 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { watchCli } from './process.js';

const UNREACHABLE = 'qemu+unix:///system?socket=/nonexistent/libvirt-sock';

function workspace(): { dir: string; env: NodeJS.ProcessEnv; disk: string } {
  const dir = tempDir('devpivot-exit-');
  const disk = join(dir, 'disk.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '16M']);
  const env = { DEVPIVOT_STATE_DIR: join(dir, 'state'), DEVPIVOT_CACHE_DIR: join(dir, 'cache') };
  return { dir, env, disk };
}

function scenario(dir: string, name: string, text: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, text);
  return file;
}

function listen<S extends Server | TcpServer>(server: S): Promise<{ server: S; port: number }> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address ? address.port : 0 });
    });
  });
}

/** A registry that accepts every request and never answers: prepare's pull waits on it until stopped. */
async function hangingRegistry() {
  const requests: string[] = [];
  const { server, port } = await listen(
    createHttpServer((req) => {
      requests.push(`${req.method} ${req.url}`);
    }),
  );
  return {
    port,
    requests,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A libvirt daemon as seen through qemu+tcp that accepts the connection and never says a word. */
/** A libvirtd that accepts connections and never answers; `connected` resolves at the first connection. */
async function silentLibvirt() {
  const sockets = new Set<import('node:net').Socket>();
  let connect: () => void = () => {};
  const connected = new Promise<void>((resolve) => {
    connect = resolve;
  });
  const { server, port } = await listen(
    createTcpServer((socket) => {
      sockets.add(socket);
      connect();
      socket.on('data', () => {});
      socket.on('error', () => {});
    }),
  );
  return {
    uri: `qemu+tcp://127.0.0.1:${port}/system`,
    connected,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

function pullScenario(dir: string, disk: string, port: number): string {
  return scenario(
    dir,
    'pull',
    `images:\n  disk: ${disk}\noscontainers:\n  target: { pull: '127.0.0.1:${port}/os/hang:1' }\nnodes:\n  n: { image: disk, pivot: target }\nsteps:\n  - up\n`,
  );
}

test('2: libvirt unreachable in prepare is a set-up error; the registry it started is stopped', async (t) => {
  const { dir, env, disk } = workspace();
  const file = scenario(dir, 'unreachable', `images:\n  disk: ${disk}\nnodes:\n  n: { image: disk }\nsteps:\n  - up\n`);
  const run = await runCli(['run', file, '--connect', UNREACHABLE], { env });
  t.is(run.code, 2, run.stdout + run.stderr);
  t.regex(run.stdout, /✗ prepare .*cannot reach libvirt/);
  t.regex(run.stdout, /registry stopped/);
});

test('2: a missing tool in prepare (ostree) is a set-up error', async (t) => {
  const { dir, env, disk } = workspace();
  const commit = 'c'.repeat(64);
  const repo = join(dir, 'repo');
  mkdirSync(join(repo, 'objects', 'cc'), { recursive: true });
  writeFileSync(join(repo, 'config'), '[core]\nrepo_version=1\nmode=archive-z2\n');
  writeFileSync(join(repo, 'objects', 'cc', `${commit.slice(2)}.commit`), '');
  const file = scenario(
    dir,
    'no-ostree',
    `images:\n  disk: ${disk}\noscontainers:\n  mine: { build: { repo: ./repo, commit: ${commit} } }\nnodes:\n  n: { image: disk, pivot: mine }\n`,
  );
  const run = await runCli(['run', file, '--connect', UNREACHABLE], { env: { ...env, PATH: '/nonexistent' } });
  t.is(run.code, 2, run.stdout + run.stderr);
  t.regex(run.stdout, /✗ prepare .*OSTREE|✗ prepare .*ostree/i);
});

/** How long this machine takes right now to start devpivot and exit (`--version`): what any run costs at least. */
async function startupMs(env: NodeJS.ProcessEnv): Promise<number> {
  return (await watchCli(['--version'], env).exited).ms;
}

// Timed: run alone, not next to the other CLI processes of this file.
test.serial('2: a tiny timeout ends the run in prepare, and the process within 2 s', async (t) => {
  const { dir, env, disk } = workspace();
  const file = scenario(
    dir,
    'tiny',
    `timeout: 1ms\nimages:\n  disk: ${disk}\nnodes:\n  n: { image: disk }\nsteps:\n  - up\n`,
  );
  const baseline = await startupMs(env);
  const run = watchCli(['run', file, '--connect', UNREACHABLE], env);
  await run.until(/scenario tiny/);
  const runStarted = Date.now();
  const end = await run.exited;
  const afterRunStart = Date.now() - runStarted;
  t.log(
    `timeout 1ms: exited ${afterRunStart} ms after the run started, ${end.ms} ms after the process started (start-up alone: ${baseline} ms)`,
  );
  t.is(end.code, 2, run.stdout + run.stderr);
  t.regex(run.stdout, /the scenario's timeout of 1ms ran out/);
  t.true(afterRunStart < 2000, `${afterRunStart} ms`);
  const zero = scenario(dir, 'zero', `timeout: 0s\nimages:\n  disk: ${disk}\nnodes:\n  n: { image: disk }\n`);
  const refused = watchCli(['run', zero, '--connect', UNREACHABLE], env);
  const zeroEnd = await refused.exited;
  t.log(`timeout 0s: refused, exited ${zeroEnd.ms} ms after the start`);
  t.is(zeroEnd.code, 2);
  t.regex(refused.stderr, /zero\.yaml:1:10: timeout must be at least 1ms/);
  t.true(zeroEnd.ms - baseline < 2000, `${zeroEnd.ms} ms, start-up ${baseline} ms`);
});

for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  test(`${code}: ${signal} during prepare cleans up (the registry stops) and exits ${code}`, async (t) => {
    const { dir, env, disk } = workspace();
    const registry = await hangingRegistry();
    try {
      const run = watchCli(['run', pullScenario(dir, disk, registry.port), '--connect', UNREACHABLE], env);
      await run.until(/registry listening/);
      while (registry.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      run.signal(signal);
      const end = await run.exited;
      t.log(`${signal}: exited ${end.afterSignalMs} ms after the signal`);
      t.is(end.code, code, run.stdout + run.stderr);
      t.regex(run.stdout, new RegExp(`✗ prepare .*interrupted \\(interrupted by ${signal}\\)`));
      t.regex(run.stdout, /registry stopped/);
      t.true(end.afterSignalMs! < 5000);
    } finally {
      registry.close();
    }
  });
}

test.serial(
  '130: a second SIGINT exits at once, while the first one waits for a libvirt connect that never answers',
  async (t) => {
    const { dir, env, disk } = workspace();
    const libvirt = await silentLibvirt();
    try {
      const file = scenario(dir, 'silent', `images:\n  disk: ${disk}\nnodes:\n  n: { image: disk }\nsteps:\n  - up\n`);
      const run = watchCli(['run', file, '--connect', libvirt.uri], env);
      await libvirt.connected; // prepare is in its libvirt connect, which hangs
      await new Promise((resolve) => setTimeout(resolve, 200));
      run.signal('SIGINT');
      await new Promise((resolve) => setTimeout(resolve, 300));
      t.is(run.child.exitCode, null, 'the first signal waits for the work it stopped');
      run.signal('SIGINT');
      const end = await run.exited;
      t.log(`double Ctrl-C: exited ${end.afterSignalMs} ms after the second SIGINT`);
      t.is(end.code, 130, run.stdout + run.stderr);
      t.true(end.afterSignalMs! < 2000, `${end.afterSignalMs} ms`);
    } finally {
      libvirt.close();
    }
  },
);

test('a single SIGINT during that hung connect still ends the process (after the abandon delay), with 130', async (t) => {
  t.timeout(60_000);
  const { dir, env, disk } = workspace();
  const libvirt = await silentLibvirt();
  try {
    const file = scenario(dir, 'silent', `images:\n  disk: ${disk}\nnodes:\n  n: { image: disk }\nsteps:\n  - up\n`);
    const run = watchCli(['run', file, '--connect', libvirt.uri], env);
    await libvirt.connected; // prepare is in its libvirt connect, which hangs
    await new Promise((resolve) => setTimeout(resolve, 200));
    run.signal('SIGINT');
    const end = await run.exited;
    t.log(`single Ctrl-C on a hung connect: exited ${end.afterSignalMs} ms after the signal`);
    t.is(end.code, 130, run.stdout + run.stderr);
    t.regex(run.stdout, /connecting to libvirt was stopped but did not finish/);
    t.regex(run.stdout, /registry stopped/);
    t.true(end.afterSignalMs! < 15_000);
  } finally {
    libvirt.close();
  }
});
