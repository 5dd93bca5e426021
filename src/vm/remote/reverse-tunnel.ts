/**
 * Make servers on this machine's loopback reachable on a remote libvirt host's loopback, where its user-mode guests
 * see them as 10.0.2.2:PORT: one `ssh -N` with a remote forward per local port, the remote port chosen there
 * (`-R 127.0.0.1:0:127.0.0.1:LOCAL`: ssh logs "Allocated port N for remote forward to HOST:PORT", OpenSSH ssh.c
 * ssh_confirm_remote_forward). The same ssh can forward unix sockets the other way too: `-R /remote.sock:/local.sock`
 * makes sshd listen on the remote path and connect each of its connections to the local one (ssh(1) -R). ssh logs
 * no line for those at its default level; with -v, ssh_confirm_remote_forward logs "remote forward success for:
 * listen PATH:-2, connect …" (debug), which is what `open` waits for (OpenSSH ssh.c, openssh-portable). sshd
 * creates the remote socket with its StreamLocalBindMask (default 0177: 0600, owned by the login user;
 * sshd_config(5)), so a caller that needs another user to connect changes its mode afterwards.
 *
 * Guarantees: `open` resolves only when every forward has its remote port (every socket its remote listener), and
 * rejects with SSH_TUNNEL_FAILED
 * (ssh's last lines) if ssh exits or 20 s pass first; ExitOnForwardFailure makes a refused forward an exit. `close`
 * ends the one ssh process this module started and waits for it. A tunnel that dies later is reported through
 * `onExit`: the pivot through it would stall, the caller fails the run instead.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { DevpivotError } from '../../core/errors.js';
import { type SshDestination, sshOptionsOf } from './ssh-destination.js';

export interface ReverseTunnel {
  /** Local port → the port on the remote host's loopback that reaches it. */
  readonly remotePorts: ReadonlyMap<number, number>;
  /** ssh's process id (ours alone to end). */
  readonly pid: number;
  close(): Promise<void>;
}

export interface TunnelOptions {
  destination: SshDestination;
  localPorts: number[];
  /** Unix sockets to forward: sshd listens on `remote` (its directory must exist there), connecting to `local`. */
  sockets?: readonly { remote: string; local: string }[];
  signal?: AbortSignal;
  /** How long ssh may take to log in and allocate every port (default 20 s). */
  timeoutMs?: number;
  /** Called if ssh exits while the tunnel is open (not after `close`). */
  onExit?: (reason: string) => void;
}

const ALLOCATED = /^Allocated port (\d+) for remote forward to [^:]+:(\d+)/;
const SOCKET_FORWARDED = /^debug1: remote forward success for: listen (\/[^:]*):/;

export function openReverseTunnel(options: TunnelOptions): Promise<ReverseTunnel> {
  const { destination, localPorts } = options;
  const sockets = options.sockets ?? [];
  const args = [
    '-N',
    '-T',
    // -v only for the socket forwards' confirmations (see above); its other debug lines are not kept.
    ...(sockets.length > 0 ? ['-v'] : []),
    '-o',
    'ExitOnForwardFailure=yes',
    '-o',
    'ServerAliveInterval=10',
    '-o',
    'ServerAliveCountMax=3',
    ...sshOptionsOf(destination),
    ...localPorts.flatMap((port) => ['-R', `127.0.0.1:0:127.0.0.1:${port}`]),
    ...sockets.flatMap(({ remote, local }) => ['-R', `${remote}:${local}`]),
    '--',
    destination.host,
  ];
  const child = spawn('ssh', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const remotePorts = new Map<number, number>();
  const listening = new Set<string>();
  const lines: string[] = [];
  let closing = false;
  let opened = false;
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));

  return new Promise<ReverseTunnel>((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      reject(
        new DevpivotError(
          'SSH_TUNNEL_FAILED',
          `ssh to ${destination.user ? `${destination.user}@` : ''}${destination.host} for a reverse tunnel: ${why}${lines.length ? `\n${lines.slice(-8).join('\n')}` : ''}`,
        ),
      );
    };
    const onAbort = () => fail('cancelled');
    const timer = setTimeout(
      () => fail(`not every remote forward was set up after ${(options.timeoutMs ?? 20_000) / 1000} s`),
      options.timeoutMs ?? 20_000,
    );
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let rest = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (text: string) => {
      const parts = (rest + text).split(/\r?\n/);
      rest = parts.pop() ?? '';
      for (const line of parts) {
        const match = ALLOCATED.exec(line);
        const socket = SOCKET_FORWARDED.exec(line);
        if (match) remotePorts.set(Number(match[2]), Number(match[1]));
        else if (socket) listening.add(socket[1]!);
        else if (line.trim() && !line.startsWith('debug')) lines.push(line.trim());
      }
      const ready =
        localPorts.every((port) => remotePorts.has(port)) && sockets.every(({ remote }) => listening.has(remote));
      if (!opened && ready) {
        opened = true;
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        resolve(tunnel(child, remotePorts, exited, () => (closing = true)));
      }
    });
    child.once('error', (error) => fail(error.message));
    child.once('close', (code, signal) => {
      const why = `ssh exited (${signal ?? `status ${code}`})`;
      if (!opened) fail(why);
      else if (!closing) options.onExit?.(`${why}${lines.length ? `: ${lines.at(-1)}` : ''}`);
    });
  });
}

function tunnel(
  child: ChildProcess,
  remotePorts: Map<number, number>,
  exited: Promise<void>,
  markClosing: () => void,
): ReverseTunnel {
  return {
    remotePorts,
    pid: child.pid!,
    async close() {
      markClosing();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
