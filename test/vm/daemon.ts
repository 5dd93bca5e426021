/**
 * A private libvirtd for tests, so tests can exercise the remote protocol and destructive commands (`down --all`)
 * without touching the shared system daemon that other engineers use. A second *system* daemon is impossible (the
 * qemu driver locks /run/libvirt/qemu), so this one runs as `nobody` in session mode, with its own socket
 * directory, config, pool and TCP listener on 127.0.0.1 without auth. URIs:
 *   qemu+tcp://127.0.0.1:<port>/session             (remote protocol over TCP)
 *   qemu+unix:///session?socket=<dir>/run/libvirt-sock
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { freeLoopbackPort } from '../../src/core/free-port.js';

const NOBODY = 65534;
const NOGROUP = 65534;

export interface TestDaemon {
  tcpUri: string;
  unixUri: string;
  poolPath: string;
  dir: string;
  /** Kill the daemon (SIGTERM, then SIGKILL) and wait for it to exit. */
  stop(): Promise<void>;
  /** Start it again on the same port and directories (for reconnect tests). */
  restart(): Promise<void>;
  /** Stop and remove its directory. Domains it still runs die with it. */
  dispose(): Promise<void>;
}

async function waitFor(path: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`test libvirtd did not create ${path} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function startTestDaemon(): Promise<TestDaemon> {
  const dir = mkdtempSync('/tmp/dpvm-');
  const home = join(dir, 'home');
  const run = join(dir, 'run');
  const poolPath = join(dir, 'pool');
  for (const sub of [home, run, poolPath]) {
    mkdirSync(sub, { recursive: true });
    chownSync(sub, NOBODY, NOGROUP);
  }
  chmodSync(dir, 0o755);
  const port = await freeLoopbackPort();
  const config = join(dir, 'libvirtd.conf');
  writeFileSync(
    config,
    [
      'listen_tls = 0',
      'listen_tcp = 1',
      'listen_addr = "127.0.0.1"',
      `tcp_port = "${port}"`,
      'auth_tcp = "none"',
      `unix_sock_dir = "${run}"`,
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const socket = join(run, 'libvirt-sock');
  let child: ChildProcess | undefined;
  const start = async () => {
    rmSync(socket, { force: true });
    child = spawn(
      'setpriv',
      [
        `--reuid=${NOBODY}`,
        `--regid=${NOGROUP}`,
        '--clear-groups',
        'libvirtd',
        '--listen',
        '-f',
        config,
        '--pid-file',
        join(run, 'libvirtd.pid'),
      ],
      {
        env: { HOME: home, XDG_RUNTIME_DIR: run, PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
        stdio: ['ignore', 'ignore', 'ignore'],
      },
    );
    await waitFor(socket, 15_000);
    // the TCP listener comes up with the unix socket; give it a moment
    await new Promise((resolve) => setTimeout(resolve, 200));
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  await start();
  return {
    tcpUri: `qemu+tcp://127.0.0.1:${port}/session`,
    unixUri: `qemu+unix:///session?socket=${socket}`,
    poolPath,
    dir,
    stop,
    restart: start,
    async dispose() {
      // qemu outlives its libvirtd by design: end the test daemon's own guests by their pid files first.
      const pidDir = join(run, 'libvirt', 'qemu', 'run');
      for (const file of existsSync(pidDir) ? readdirSync(pidDir).filter((f) => f.endsWith('.pid')) : []) {
        const pid = Number(readFileSync(join(pidDir, file), 'utf8').trim());
        if (pid > 1) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {}
        }
      }
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
