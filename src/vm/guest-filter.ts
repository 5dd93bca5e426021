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
import { chmod, mkdir, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

export class GuestFilter {
  readonly sockets: GuestFilterSockets;
  readonly stats: GuestFilterStats = { passed: 0, blocked: 0 };
  readonly #servers: Server[] = [];
  readonly #peers = new Map<keyof GuestFilterSockets, Socket>();
  readonly #policy: GuestNetworkPolicy;
  readonly #onBlocked: (what: string) => void;
  #closed = false;

  private constructor(sockets: GuestFilterSockets, policy: GuestNetworkPolicy, onBlocked: (what: string) => void) {
    this.sockets = sockets;
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
  }): Promise<GuestFilter> {
    await mkdir(options.dir, { recursive: true, mode: 0o711 });
    await chmod(options.dir, 0o711);
    const sockets = options.sockets ?? newFilterSockets(options.dir);
    if (Buffer.byteLength(sockets.fromGuest) > SUN_PATH_MAX)
      throw new Error(`guest network socket path too long for a unix socket: ${sockets.fromGuest}`);
    const seen = new Set<string>();
    const filter = new GuestFilter(sockets, options.policy, (what) => {
      if (seen.has(what)) return;
      seen.add(what);
      options.onBlocked?.(what);
    });
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
    // QEMU runs as another user (libvirt-qemu under qemu:///system); the directory's 0711 and the random names
    // keep everyone else out.
    await chmod(path, 0o666);
  }

  /** A new connection replaces the old one: QEMU connects again after every start of the domain. */
  #accept(role: keyof GuestFilterSockets, socket: Socket): void {
    if (this.#closed) {
      socket.destroy();
      return;
    }
    this.#peers.get(role)?.destroy();
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
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let offset = 0;
      while (pending.length - offset >= 4) {
        const length = pending.readUInt32BE(offset);
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
