/**
 * A run on another libvirt host (docs/ARCHITECTURE.md "Remote hosts"): its guests' 10.0.2.2 is that host's
 * loopback, where nothing of devpivot listens. Over one ssh login (the URI's), the registry's ports are forwarded
 * there on ports sshd chooses, and each node's guest-filter sockets on unix sockets in a directory of the run's own;
 * the guests are then told the remote ports and QEMU is given the remote socket paths. The local registry and
 * filters are unchanged: a guest's frames still pass devpivot's filter, through the ssh connection.
 */
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import { type GuestFilterSockets, newFilterSockets, SUN_PATH_MAX } from '../vm/guest-filter.js';
import { runRemote } from '../vm/remote/remote-command.js';
import { openReverseTunnel } from '../vm/remote/reverse-tunnel.js';
import { type SshDestination, sshDestinationOf } from '../vm/remote/ssh-destination.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** Whether a URL's hostname is this machine's loopback. */
export const isLoopbackHost = (hostname: string) => LOOPBACK.has(hostname);

/**
 * The ssh login a run's URI needs a tunnel through; undefined for this host (a local URI, or another transport to
 * this host's loopback). Any other remote transport cannot carry the tunnel: a typed error before anything starts.
 */
export function remoteDestination(uri: string | undefined): SshDestination | undefined {
  if (!uri) return undefined;
  const ssh = sshDestinationOf(uri);
  if (ssh) return ssh;
  let host = '';
  try {
    host = new URL(uri).hostname;
  } catch {
    return undefined; // not a URL: libvirt itself rejects it
  }
  if (host === '' || isLoopbackHost(host)) return undefined;
  throw new DevpivotError(
    'REMOTE_TRANSPORT_UNSUPPORTED',
    `--connect ${uri}: guests on ${host} could not reach devpivot's registry on this machine (10.0.2.2 is ${host}'s own loopback), and only an ssh transport can carry a tunnel`,
    { hint: `use qemu+ssh://USER@${host}/system (with ?keyfile=PATH if the key is not ssh's default)` },
  );
}

export interface RemoteHost {
  readonly host: string;
  /** Local port → the port on the remote host's loopback that reaches it. */
  readonly remotePorts: ReadonlyMap<number, number>;
  /** Per node: where its filter listens here, and the forwards QEMU connects to there. */
  readonly filterSockets: ReadonlyMap<string, { local: GuestFilterSockets; guest: GuestFilterSockets }>;
  /** The run's socket directory on the remote host (removed by `close`); undefined without filters. */
  readonly socketDir: string | undefined;
  /** The ssh process of the tunnel. */
  readonly pid: number;
  /** End the tunnel and remove the socket directory there. Never throws. */
  close(): Promise<void>;
}

export async function openRemoteHost(options: {
  destination: SshDestination;
  sessionId: string;
  /** Ports of this host's loopback that the guests reach (the registry's). */
  localPorts: readonly number[];
  /** Nodes whose guest filter is forwarded, and the local directory of their sockets. */
  filterNodes: readonly string[];
  localSocketDir: string;
  bus: EventBus;
  signal: AbortSignal;
  /** The tunnel ended while the run needs it: the run fails with this error. */
  onLost: (error: DevpivotError) => void;
}): Promise<RemoteHost> {
  const { destination, bus } = options;
  const where = `${destination.user ? `${destination.user}@` : ''}${destination.host}`;
  const fail = (what: string, output: string) =>
    new DevpivotError('SSH_TUNNEL_FAILED', `${what} on ${where}: ${output || 'ssh failed'}`);
  let socketDir: string | undefined;
  const filterSockets = new Map<string, { local: GuestFilterSockets; guest: GuestFilterSockets }>();
  if (options.filterNodes.length > 0) {
    socketDir = `/tmp/devpivot-${options.sessionId}-${randomBytes(4).toString('hex')}`;
    for (const node of options.filterNodes) {
      const local = newFilterSockets(options.localSocketDir);
      const guest = remoteSockets(local, socketDir);
      if (Buffer.byteLength(guest.fromGuest) > SUN_PATH_MAX)
        throw fail('guest network socket path too long for a unix socket', guest.fromGuest);
      filterSockets.set(node, { local, guest });
    }
    // Traversable by QEMU's user there (libvirt-qemu under qemu:///system); without -p: it is the run's own.
    const made = await runRemote(destination, ['mkdir', '-m', '0711', '--', socketDir]);
    if (!made.ok) throw fail(`creating ${socketDir}`, made.output);
  }
  const removeDir = async () => {
    if (!socketDir) return;
    const removed = await runRemote(destination, ['rm', '-rf', '--', socketDir]);
    if (!removed.ok)
      bus.emit({
        kind: 'log',
        level: 'warn',
        source: 'engine',
        message: `removing ${socketDir} on ${where}: ${removed.output}`,
      });
  };
  let closing = false;
  let tunnel: Awaited<ReturnType<typeof openReverseTunnel>>;
  try {
    tunnel = await openReverseTunnel({
      destination,
      localPorts: [...options.localPorts],
      sockets: [...filterSockets.values()].flatMap(({ local, guest }) =>
        ROLES.map((role) => ({ remote: guest[role], local: local[role] })),
      ),
      signal: options.signal,
      onExit: (reason) => {
        if (!closing)
          options.onLost(
            new DevpivotError('SSH_TUNNEL_FAILED', `the ssh tunnel to ${where} ended during the run: ${reason}`, {
              hint: "the guests there no longer reach devpivot's registry; check the ssh connection and run again",
            }),
          );
      },
    });
  } catch (error) {
    await removeDir();
    throw error;
  }
  const close = async () => {
    closing = true;
    await tunnel.close();
    await removeDir();
  };
  // sshd made the sockets 0600 for the login user (StreamLocalBindMask); QEMU runs as another user there.
  const guestPaths = [...filterSockets.values()].flatMap(({ guest }) => ROLES.map((role) => guest[role]));
  if (guestPaths.length > 0) {
    const opened = await runRemote(destination, ['chmod', '0666', '--', ...guestPaths]);
    if (!opened.ok) {
      await close();
      throw fail('making the guest network sockets reachable for QEMU', opened.output);
    }
  }
  const ports = [...tunnel.remotePorts].map(([local, remote]) => `127.0.0.1:${local} as 127.0.0.1:${remote}`);
  bus.emit({
    kind: 'log',
    level: 'info',
    source: 'engine',
    message: `remote host ${where}: ssh tunnel (pid ${tunnel.pid}) forwards ${ports.join(', ')}${socketDir ? `; guest network sockets in ${socketDir}` : ''}`,
  });
  return { host: destination.host, remotePorts: tunnel.remotePorts, filterSockets, socketDir, pid: tunnel.pid, close };
}

const ROLES = ['fromGuest', 'toHost', 'toGuest'] as const;

function remoteSockets(local: GuestFilterSockets, dir: string): GuestFilterSockets {
  return {
    fromGuest: join(dir, basename(local.fromGuest)),
    toHost: join(dir, basename(local.toHost)),
    toGuest: join(dir, basename(local.toGuest)),
  };
}

/** `10.0.2.2:LOCAL` → `10.0.2.2:REMOTE` for a forwarded port; anything else as it is. */
export function remoteGuestAddress(hostPort: string, remotePorts: ReadonlyMap<number, number>): string {
  const match = /^10\.0\.2\.2:(\d+)$/.exec(hostPort);
  const remote = match ? remotePorts.get(Number(match[1])) : undefined;
  return remote === undefined ? hostPort : `10.0.2.2:${remote}`;
}
