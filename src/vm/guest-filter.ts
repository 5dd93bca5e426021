/**
 * devpivot's side of a node's guest network filter (docs/ARCHITECTURE.md "## Guest network"): three unix sockets
 * that the node's QEMU connects to (its `filter-redirector` chardevs, domain-xml.ts):
 * - `fromGuest`: every frame the guest's NIC sends, taken away from slirp;
 * - `toHost`: the frames devpivot lets through, handed on to slirp;
 * - `toGuest`: frames devpivot sends to the guest (its answers to what it refused: TCP resets, ICMP unreachables).
 * Frames travel as QEMU's socket netdev and filter-redirector carry them: a 4-byte big-endian length, then the
 * Ethernet frame (qemu `net/filter-mirror.c`, without vnet headers). Without devpivot on the other end the guest
 * reaches nothing: QEMU drops what it cannot write to `fromGuest`.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { frameVerdict, type GuestNetworkPolicy } from './guest-network.js';

/** The filter's socket paths, as the domain XML names them. */
export interface GuestFilterSockets {
  fromGuest: string;
  toHost: string;
  toGuest: string;
}

export interface GuestFilterStats {
  passed: number;
  blocked: number;
}

/**
 * The largest frame accepted from QEMU: an Ethernet frame is at most 1518 bytes (9018 with jumbo frames); a length
 * beyond this is a hostile or broken peer and ends its connection before anything is buffered.
 */
export const MAX_FRAME = 64 * 1024;

/** A unix socket path is at most 107 bytes (sun_path). */
export const SUN_PATH_MAX = 107;

/**
 * Where the sockets of a session go: a directory the QEMU user (libvirt-qemu under qemu:///system) can traverse,
 * which a home directory usually is not: /run/devpivot for root, the temporary directory otherwise.
 * DEVPIVOT_RUN_DIR overrides.
 */
export function guestFilterDir(sessionId: string, env: NodeJS.ProcessEnv = process.env): string {
  const uid = process.getuid?.() ?? 0;
  const base = env.DEVPIVOT_RUN_DIR ?? (uid === 0 ? '/run/devpivot' : join(tmpdir(), `devpivot-${uid}`));
  return join(base, sessionId);
}

/** Fresh random socket names in `dir` (nothing listens on them yet). */
export function newFilterSockets(dir: string): GuestFilterSockets {
  const token = randomBytes(8).toString('hex');
  return {
    fromGuest: join(dir, `${token}-g.sock`),
    toHost: join(dir, `${token}-h.sock`),
    toGuest: join(dir, `${token}-r.sock`),
  };
}

/**
 * Make `dir` (0711: QEMU's user may traverse it, nobody may list it) or check the one there: it must be a directory,
 * not a symlink, and the caller's. A predictable path another user created first is refused, never used. The mode is
 * set through a descriptor opened with O_NOFOLLOW, so it cannot land on another file.
 */
async function privateDir(dir: string): Promise<void> {
  await mkdir(dir, { mode: 0o711 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  const info = await lstat(dir);
  const uid = process.getuid?.() ?? 0;
  if (info.isSymbolicLink() || !info.isDirectory())
    throw new Error(`guest network directory ${dir} is a symlink or not a directory: refusing it`);
  if (info.uid !== uid)
    throw new Error(`guest network directory ${dir} belongs to uid ${info.uid}, not ${uid}: refusing it`);
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    await handle.chmod(0o711);
  } finally {
    await handle.close();
  }
}

export class GuestFilter {
  readonly sockets: GuestFilterSockets;
  readonly stats: GuestFilterStats = { passed: 0, blocked: 0 };
  readonly #servers: Server[] = [];
  readonly #peers = new Map<keyof GuestFilterSockets, Socket>();
  readonly #policy: GuestNetworkPolicy;
  readonly #onBlocked: (what: string) => void;
  readonly #socketMode: number;
  #closed = false;

  private constructor(
    sockets: GuestFilterSockets,
    policy: GuestNetworkPolicy,
    onBlocked: (what: string) => void,
    socketMode: number,
  ) {
    this.sockets = sockets;
    this.#socketMode = socketMode;
    this.#policy = policy;
    this.#onBlocked = onBlocked;
  }

  /**
   * Listen on three fresh sockets in `dir` (created traversable, 0711, so only someone who knows the random names
   * can connect), or on `sockets` chosen earlier with `newFilterSockets(dir)` (a remote host's forwards name them
   * before the filter listens). `onBlocked` hears each refused destination once.
   */
  static async start(options: {
    dir: string;
    sockets?: GuestFilterSockets;
    policy: GuestNetworkPolicy;
    onBlocked?: (what: string) => void;
    /** Whether QEMU runs as the caller (a session daemon): the sockets are then 0600, else 0666 (see #listen). */
    qemuIsCaller?: boolean;
  }): Promise<GuestFilter> {
    await privateDir(dirname(options.dir));
    await privateDir(options.dir);
    const sockets = options.sockets ?? newFilterSockets(options.dir);
    if (Buffer.byteLength(sockets.fromGuest) > SUN_PATH_MAX)
      throw new Error(`guest network socket path too long for a unix socket: ${sockets.fromGuest}`);
    const seen = new Set<string>();
    const filter = new GuestFilter(
      sockets,
      options.policy,
      (what) => {
        if (seen.has(what)) return;
        seen.add(what);
        options.onBlocked?.(what);
      },
      options.qemuIsCaller ? 0o600 : 0o666,
    );
    try {
      await Promise.all((['fromGuest', 'toHost', 'toGuest'] as const).map((role) => filter.#listen(role)));
    } catch (error) {
      await filter.close();
      throw error;
    }
    return filter;
  }

  async #listen(role: keyof GuestFilterSockets): Promise<void> {
    const path = this.sockets[role];
    await rm(path, { force: true });
    const server = createServer((socket) => this.#accept(role, socket));
    this.#servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // Connecting takes write permission on the socket. QEMU runs as another user under qemu:///system
    // (libvirt-qemu), so the socket is 0666 there, and the directory's 0711 (not listable) with random names keeps
    // everyone else from finding it; where QEMU runs as the caller, 0600. The directory is the caller's and not a
    // symlink (privateDir), so this chmod cannot be redirected.
    await chmod(path, this.#socketMode);
  }

  /**
   * One peer per socket: a connection while QEMU's is open is refused (closed at once), so no other local user can
   * take a guest's network over. A restarted QEMU connects again after its old connection closed (its chardevs
   * reconnect every second, domain-xml.ts).
   */
  #accept(role: keyof GuestFilterSockets, socket: Socket): void {
    const current = this.#peers.get(role);
    if (this.#closed || (current && !current.destroyed)) {
      socket.destroy();
      return;
    }
    this.#peers.set(role, socket);
    socket.on('error', () => {});
    socket.on('close', () => {
      if (this.#peers.get(role) === socket) this.#peers.delete(role);
    });
    if (role !== 'fromGuest') {
      socket.resume(); // QEMU sends nothing on these
      return;
    }
    let pending: Buffer = Buffer.alloc(0);
    // With frames capped, `pending` never holds more than one frame's bytes: each chunk is copied a bounded number of
    // times, so buffering is linear in what arrives.
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let offset = 0;
      while (pending.length - offset >= 4) {
        const length = pending.readUInt32BE(offset);
        if (length > MAX_FRAME) {
          socket.destroy();
          return;
        }
        if (pending.length - offset - 4 < length) break;
        this.#frame(pending.subarray(offset + 4, offset + 4 + length));
        offset += 4 + length;
      }
      pending = offset === 0 ? pending : Buffer.from(pending.subarray(offset));
    });
  }

  #frame(frame: Buffer): void {
    const verdict = frameVerdict(frame, this.#policy);
    if (verdict.pass) {
      this.stats.passed += 1;
      this.#send('toHost', frame);
      return;
    }
    this.stats.blocked += 1;
    this.#onBlocked(verdict.what);
    if (verdict.reply) this.#send('toGuest', verdict.reply);
  }

  #send(role: 'toHost' | 'toGuest', frame: Buffer): void {
    const peer = this.#peers.get(role);
    if (!peer || peer.destroyed) return;
    const header = Buffer.alloc(4);
    header.writeUInt32BE(frame.length, 0);
    peer.write(Buffer.concat([header, frame]));
  }

  /** Stop listening, drop QEMU's connections (its guest then reaches nothing) and remove the socket files. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const peer of this.#peers.values()) peer.destroy();
    this.#peers.clear();
    await Promise.all(this.#servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    await Promise.all(Object.values(this.sockets).map((path) => rm(path, { force: true })));
  }
}
