/**
 * How a run reaches its nodes and what its nodes reach (docs/ARCHITECTURE.md "## Guest network"): the session's ssh
 * key, and per node a free loopback port forwarded to its port 22 and the packet filter that limits the guest to
 * the registry. The filters live in this process, as long as the registry does: a guest whose filter is gone
 * reaches nothing.
 */
import { rmdir } from 'node:fs/promises';
import type { EventBus } from '../core/bus.js';
import { freeLoopbackPort } from '../core/free-port.js';
import { domainName, type GuestNetworkSpec } from '../vm/domain-xml.js';
import { GuestFilter, type GuestFilterSockets, guestFilterDir } from '../vm/guest-filter.js';
import { GUEST_HOST_ADDRESS } from '../vm/guest-network.js';
import type { SshDestination } from '../vm/remote/ssh-destination.js';
import { forgetHostKey, pinHostKeys, removeSessionKey, type SessionKey, type SshTarget } from './ssh.js';

interface NodeAccess {
  sshPort: number;
  filter: GuestFilter | undefined;
}

/** A node's filter sockets when QEMU runs on a remote host: the local ones and their forwards there. */
export type ForwardedSockets = ReadonlyMap<string, { local: GuestFilterSockets; guest: GuestFilterSockets }>;

export class SessionAccess {
  readonly #nodes = new Map<string, NodeAccess>();
  /** Nodes whose host keys devpivot made and recorded: ssh accepts those keys and no other. */
  readonly #pinned = new Set<string>();
  #closed = false;

  private constructor(
    readonly sessionId: string,
    readonly stateDir: string,
    /** The session's key pair; undefined when ssh-keygen could not run (nodes then get no key). */
    readonly key: SessionKey | undefined,
    /**
     * The port of 10.0.2.2 each node may reach (its own port of the registry); undefined: no filter (the registry
     * is not on this host's loopback).
     */
    readonly hostTcpPort: ((node: string) => number) | undefined,
    readonly bus: EventBus,
    /** The remote libvirt host's login and the filters' forwarded sockets there (engine/remote-host.ts). */
    readonly remote: { via: SshDestination; sockets: ForwardedSockets } | undefined,
  ) {}

  /**
   * The session's key (generated now if needed) and the guest network policy for a registry that guests reach at
   * `guestRegistry` (`10.0.2.2:PORT` when it runs on this host's loopback) and each node at its own port,
   * `nodeRegistry` (docs/ARCHITECTURE.md "Per-node ports"): a node's filter lets it reach that port only. Without ssh-keygen, nodes get no key:
   * that fails only when `needsSsh` (a scenario with ssh or pivot steps).
   */
  static async prepare(options: {
    sessionId: string;
    stateDir: string;
    guestRegistry: string;
    /** `10.0.2.2:NODEPORT` by node; a node missing here reaches `guestRegistry`. */
    nodeRegistry?: ReadonlyMap<string, string>;
    bus: EventBus;
    needsSsh: boolean;
    /** Makes (or finds) the session's key pair: the engine's `Deps.sessionKey`. */
    sessionKey: (options: { stateDir: string; sessionId: string }) => Promise<SessionKey>;
    /** The nodes run on a remote host: ssh reaches them through `via`, QEMU connects to the forwarded sockets. */
    remote?: { via: SshDestination; sockets: ForwardedSockets };
  }): Promise<SessionAccess> {
    const { sessionId, stateDir, guestRegistry, bus } = options;
    let key: SessionKey | undefined;
    try {
      key = await options.sessionKey({ stateDir, sessionId });
    } catch (error) {
      if (options.needsSsh) throw error;
      bus.emit({
        kind: 'log',
        level: 'warn',
        source: 'engine',
        message: `nodes get no ssh key (devpivot ssh will not work): ${(error as Error).message}`,
      });
    }
    const local = guestRegistry.split(':')[0] === GUEST_HOST_ADDRESS;
    if (!local)
      bus.emit({
        kind: 'log',
        level: 'warn',
        source: 'engine',
        message: `the registry ${guestRegistry} is not on this host's loopback: guests' network is not restricted`,
      });
    const port = (node: string) => Number((options.nodeRegistry?.get(node) ?? guestRegistry).split(':')[1]);
    return new SessionAccess(sessionId, stateDir, key, local ? port : undefined, bus, options.remote);
  }

  /** Reserve the ssh ports and start the filters of these nodes now (prepare), all at once. */
  async reserve(nodes: readonly string[]): Promise<void> {
    await Promise.all(nodes.map((node) => this.#access(node)));
  }

  async #access(node: string): Promise<NodeAccess> {
    let access = this.#nodes.get(node);
    if (!access) {
      access = { sshPort: await freeLoopbackPort(), filter: undefined };
      this.#nodes.set(node, access);
    }
    if (this.hostTcpPort && !access.filter && !this.#closed) {
      const forwarded = this.remote?.sockets.get(node);
      access.filter = await GuestFilter.start({
        dir: guestFilterDir(this.sessionId),
        ...(forwarded ? { sockets: forwarded.local } : {}),
        // A remote QEMU reaches these through this user's own ssh client: the sockets can be the caller's only.
        qemuIsCaller: this.remote !== undefined,
        policy: { hostTcpPorts: [this.hostTcpPort(node)] },
        onBlocked: (what) =>
          this.bus.emit({
            kind: 'log',
            level: 'warn',
            source: 'vm',
            message: `node ${node} tried to reach ${what}: blocked (guests reach only the registry)`,
          }),
      });
    }
    return access;
  }

  /**
   * Record the host keys devpivot made for `node` (its Ignition writes them) as the only ones its ssh accepts,
   * replacing what the session knew for it.
   */
  async pinHostKeys(node: string, publicKeys: readonly string[]): Promise<void> {
    if (!this.key) return;
    await pinHostKeys(this.key, domainName(this.sessionId, node), publicKeys);
    this.#pinned.add(node);
  }

  /** A node's network: its ssh port (the same again when the node is created again) and its running filter. */
  async forNode(node: string): Promise<GuestNetworkSpec> {
    const access = await this.#access(node);
    // A node created again is a new machine: with keys of its own making, new ones (its pinned keys are its
    // Ignition's, the same again).
    if (this.key && !this.#pinned.has(node)) await forgetHostKey(this.key, domainName(this.sessionId, node));
    const sockets = this.remote?.sockets.get(node)?.guest ?? access.filter?.sockets;
    return { sshPort: access.sshPort, ...(access.filter && sockets ? { filter: sockets } : {}) };
  }

  /** Where ssh reaches a node of this run, once it was created. */
  target(node: string): SshTarget | undefined {
    const access = this.#nodes.get(node);
    if (!access || !this.key) return undefined;
    return {
      session: this.key,
      alias: domainName(this.sessionId, node),
      port: access.sshPort,
      pinned: this.#pinned.has(node),
      ...(this.remote ? { via: this.remote.via } : {}),
    };
  }

  /** Stop the filters: the guests of this run reach nothing any more. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const access of this.#nodes.values()) await access.filter?.close();
    await rmdir(guestFilterDir(this.sessionId)).catch(() => {});
  }

  /** Remove the key pair (the session's VMs are gone). */
  async removeKey(): Promise<void> {
    await removeSessionKey(this.stateDir, this.sessionId);
  }
}
