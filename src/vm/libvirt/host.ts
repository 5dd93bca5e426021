import { posix } from 'node:path';
import type { EventBus } from '../../core/bus.js';
import { DevpivotError } from '../../core/errors.js';
import type { DevpivotEvent } from '../../core/events.js';
import { libvirtUri, stateDir } from '../../core/paths.js';
import { type AccelProbe, probeAccelCached } from '../accel.js';
import { type DevpivotMetadata, domainName, domainXml, fwCfgMethod, validName, volumeName } from '../domain-xml.js';
import type { NodeSpec, VmHost } from '../host.js';
import { digestCacheFile, imageDigest, inspectQcow2 } from '../qcow2.js';
import { probeRemoteAccel } from '../remote/remote-accel.js';
import { assertValidSessionId, consoleLogPath, newSessionId, recordSession } from '../sessions.js';
import { volumeXml } from '../storage-xml.js';
import { Connection } from './connection.js';
import { subscribeGuestResets } from './guest-resets.js';
import { InFlight, untilAborted } from './inflight.js';
import { assertSessionFree, cleanup, removeLeftovers } from './inventory.js';
import { LifecycleTranslator } from './lifecycle.js';
import { LibvirtNode, type NodeHost } from './node.js';
import { createDataVolume, ensureBaseVolume, ensurePool } from './pool.js';
import type { StoragePool } from './storage.js';

export interface OpenHostOptions {
  /** libvirt URI; default: LIBVIRT_DEFAULT_URI, else qemu:///system for root, qemu:///session otherwise. */
  uri?: string;
  /** Session id (default: 8 random hex digits). Domains are named `devpivot-<session>-<node>`. */
  sessionId?: string;
  bus: EventBus;
  /** Where session records and canonical console logs go (default: stateDir()). */
  stateDir?: string;
  /** Target directory for a new `devpivot` pool when the URI does not imply one (remote session daemons). */
  poolPath?: string;
  /** Skip the accelerator probe (default: probe locally; remotely, over the URI's ssh login). */
  domainType?: 'kvm' | 'qemu';
  /** The remote probe (default: `REMOTE_ACCEL_SCRIPT` over the qemu+ssh login); injectable for tests. */
  remoteAccel?: (uri: string) => Promise<AccelProbe | undefined>;
}

let localAccel: Promise<'kvm' | 'qemu'> | undefined;

function isLocalUri(uri: string): boolean {
  const match = /^[a-z0-9+]+:\/\/([^/]*)\//.exec(uri);
  return (match?.[1] ?? '') === '' && !uri.includes('socket=');
}

/** Open a libvirt connection for one session: the factory the engine uses. */
export async function openHost(options: OpenHostOptions): Promise<LibvirtHost> {
  const uri = libvirtUri(options.uri);
  const sessionId = options.sessionId ?? newSessionId();
  assertValidSessionId(sessionId);
  const state = options.stateDir ?? stateDir();
  const conn = await Connection.open(uri);
  try {
    const libVersion = await conn.libVersion();
    await assertSessionFree(conn, sessionId);
    const host = new LibvirtHost(conn, sessionId, options.bus, state, libVersion, options);
    await host.subscribe();
    await recordSession(state, { id: sessionId, uri, startedAt: new Date().toISOString(), pid: process.pid });
    return host;
  } catch (error) {
    await conn.close();
    throw error;
  }
}

/** The VmHost contract (../host.ts) over one libvirt connection; it reconnects when the daemon restarts. */
export class LibvirtHost implements VmHost, NodeHost {
  readonly uri: string;
  readonly sessionId: string;
  readonly libVersion: number;
  readonly #bus: EventBus;
  readonly #stateDir: string;
  readonly #options: OpenHostOptions;
  #conn: Connection;
  #unsubscribe: (() => Promise<void>) | undefined;
  readonly #nodes = new Map<string, LibvirtNode>();
  /** Lives as long as the host (not the connection): a REBOOT pair split by a reconnect is still one reboot. */
  readonly #lifecycle = new LifecycleTranslator();
  #pool: Promise<{ pool: StoragePool; path: string }> | undefined;
  readonly #baseUploads = new Map<string, Promise<{ name: string; path: string }>>();
  /** Creations and uploads under way: removal and close stop them and wait for them. */
  readonly #inflight = new InFlight();
  #closed = false;
  #reconnecting = false;
  #guestResets = false;

  constructor(
    conn: Connection,
    sessionId: string,
    bus: EventBus,
    state: string,
    libVersion: number,
    options: OpenHostOptions,
  ) {
    this.#conn = conn;
    this.uri = conn.uri;
    this.sessionId = sessionId;
    this.#bus = bus;
    this.#stateDir = state;
    this.libVersion = libVersion;
    this.#options = options;
    // Start the accelerator probe now (up to 5 s where /dev/kvm exists but hangs) so it overlaps other set-up.
    if (!options.domainType && isLocalUri(this.uri)) this.#domainType().catch(() => {});
  }

  /** The current connection (replaced after a reconnect). */
  get connection(): Connection {
    return this.#conn;
  }

  get lifecycle(): LifecycleTranslator {
    return this.#lifecycle;
  }

  /** Whether this connection reports guest resets (NodeHost.guestResets). */
  get guestResets(): boolean {
    return this.#guestResets;
  }

  get nodes(): LibvirtNode[] {
    return [...this.#nodes.values()];
  }

  /** Hand an event to the bus outside the libvirt callback, so the event-loop worker is released at once. */
  emit(event: DevpivotEvent): void {
    setImmediate(() => this.#bus.emit(event));
  }

  warn(message: string): void {
    this.emit({ kind: 'log', level: 'warn', source: 'vm', message });
  }

  async subscribe(): Promise<void> {
    const events = await this.#conn.subscribeDomainEvents({
      lifecycle: (domain, event, detail) => this.#onLifecycle(domain, event, detail),
      reboot: (domain) => this.#onReboot(domain),
    });
    const resets = await subscribeGuestResets(this.#conn, (domain) => {
      if (this.#nodes.has(domain)) this.#lifecycle.guestReset(domain);
    });
    this.#guestResets = resets !== undefined;
    if (!resets)
      this.warn(`${this.uri}: no QEMU monitor events (libvirt-qemu); a guest reboot is a reset, then a restart`);
    this.#unsubscribe = async () => {
      await resets?.();
      await events();
    };
    await this.#conn.onClose((reason) => {
      if (this.#closed) return;
      this.emit({
        kind: 'log',
        level: 'error',
        source: 'vm',
        message: `lost the libvirt connection to ${this.uri} (${reason}); reconnecting`,
      });
      // Leave the libvirt callback (it holds a lock) before touching the connection.
      setImmediate(() => void this.#reconnect());
    });
  }

  #onLifecycle(domain: string, event: number, detail: number): void {
    const node = this.#nodes.get(domain);
    if (!node) return;
    const events = this.#lifecycle.lifecycle(node.name, domain, event, detail);
    // QEMU ended right after a restart after a guest reboot started it: the same reboot, started again.
    if (events.length === 1 && events[0]?.kind === 'vm.stopped' && events[0].reason === 'failed') {
      if (node.restartFailedSoon()) {
        this.warn(`${domain}: QEMU ended (failed) right after its restart; starting it again`);
        return;
      }
    }
    // A restart's own stop is not one: its console is already the new process's.
    if (events.some((e) => e.kind === 'vm.stopped')) node.console.domainStopped();
    for (const e of events) this.emit(e);
    // The guest reset and QEMU stopped for it: boot it again in a fresh process (LibvirtNode.startAfterReset).
    if (events.some((e) => e.kind === 'vm.reboot')) setImmediate(() => void node.startAfterReset());
  }

  #onReboot(domain: string): void {
    const node = this.#nodes.get(domain);
    const events = node ? this.#lifecycle.reboot(node.name, domain) : [];
    for (const e of events) this.emit(e);
    // Once per guest reboot: boot it again in a fresh process (LibvirtNode.restartAfterReboot).
    if (node && events.length > 0) setImmediate(() => void node.restartAfterReboot());
  }

  async #reconnect(): Promise<void> {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    const old = this.#conn;
    const unsubscribe = this.#unsubscribe;
    this.#unsubscribe = undefined;
    this.#pool = undefined;
    for (const node of this.#nodes.values()) node.console.domainStopped();
    await unsubscribe?.().catch(() => {});
    await old.close().catch(() => {});
    let delay = 500;
    for (let attempt = 1; !this.#closed && attempt <= 12; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (this.#closed) break;
      try {
        const conn = await Connection.open(this.uri);
        if (this.#closed) {
          // close() ran while we were reconnecting: a connection left open would hold the event loop forever.
          await conn.close().catch(() => {});
          break;
        }
        this.#conn = conn;
        await this.subscribe();
        this.emit({ kind: 'log', level: 'info', source: 'vm', message: `reconnected to ${this.uri}` });
        for (const node of this.#nodes.values()) node.console.reattachSoon(0);
        this.#reconnecting = false;
        return;
      } catch {
        delay = Math.min(delay * 2, 5000);
      }
    }
    this.#reconnecting = false;
    if (!this.#closed)
      this.emit({
        kind: 'log',
        level: 'error',
        source: 'vm',
        message: `could not reconnect to ${this.uri}; is libvirtd running?`,
      });
  }

  #remoteAccel: Promise<'kvm' | 'qemu'> | undefined;

  #ensurePool(): Promise<{ pool: StoragePool; path: string }> {
    this.#pool ??= ensurePool(this.#conn, this.#options.poolPath).catch((error) => {
      this.#pool = undefined;
      throw error;
    });
    return this.#pool;
  }

  async #domainType(): Promise<'kvm' | 'qemu'> {
    if (this.#options.domainType) return this.#options.domainType;
    if (isLocalUri(this.uri)) {
      localAccel ??= probeAccelCached(posix.join(this.#stateDir, 'accel.json')).then((probe) => probe.domainType);
      return localAccel;
    }
    // libvirt's capabilities say only that /dev/kvm exists there; where KVM is offered, prove it works as the
    // local probe does (over the URI's ssh login), since a broken /dev/kvm makes the domain die at start.
    if (!(await this.#conn.capabilities()).includes("<domain type='kvm'")) return 'qemu';
    this.#remoteAccel ??= (this.#options.remoteAccel ?? probeRemoteAccel)(this.uri).then((probe) => {
      if (!probe) return 'kvm';
      if (probe.domainType === 'qemu')
        this.emit({ kind: 'log', level: 'warn', source: 'vm', message: `${this.uri}: ${probe.detail}` });
      return probe.domainType;
    });
    return this.#remoteAccel;
  }

  createNode(spec: NodeSpec, signal?: AbortSignal): Promise<LibvirtNode> {
    const stop = signal ? AbortSignal.any([signal, this.#inflight.signal]) : this.#inflight.signal;
    return this.#inflight.track(this.#createNode(spec, stop));
  }

  async #createNode(spec: NodeSpec, signal: AbortSignal): Promise<LibvirtNode> {
    if (this.#closed) throw new DevpivotError('VM_HOST_CLOSED', 'the libvirt connection is closed');
    if (!validName(spec.name)) throw new DevpivotError('VM_BAD_NODE_NAME', `invalid node name '${spec.name}'`);
    const name = domainName(this.sessionId, spec.name);
    if (this.#nodes.has(name))
      throw new DevpivotError('VM_NODE_EXISTS', `node ${spec.name} already exists in session ${this.sessionId}`);
    const check = () => {
      if (signal.aborted) throw signal.reason ?? new DevpivotError('ABORTED', 'aborted');
    };
    const image = await inspectQcow2(spec.image);
    const digest = await imageDigest(image, digestCacheFile(this.#stateDir));
    check();
    const conn = this.#conn;
    const { pool, path: poolDir } = await this.#ensurePool();
    check();
    // The upload is shared by the nodes of one image: this node stops waiting on its own signal; the upload
    // itself stops with the host's lifetime (removal, close).
    const base = await untilAborted(this.#baseVolume(image, digest, spec.image), signal);
    check();
    const overlayName = volumeName(this.sessionId, spec.name, 'qcow2');
    const ignitionName = volumeName(this.sessionId, spec.name, 'ign');
    const logName = volumeName(this.sessionId, spec.name, 'console.log');
    await removeLeftovers(this.#conn, { name, session: this.sessionId, uri: this.uri }, pool, [
      overlayName,
      ignitionName,
      logName,
    ]);
    check();
    const created: string[] = [];
    try {
      const overlay = await pool.createVolume(
        volumeXml({
          name: overlayName,
          capacity: image.virtualSize,
          format: 'qcow2',
          backing: { path: base.path, format: 'qcow2' },
        }),
      );
      created.push(overlayName);
      const overlayPath = await overlay.path().finally(() => overlay.free());
      check();
      // Recorded before the call: a volume created while the call was in flight is still rolled back.
      created.push(ignitionName);
      const ignitionPath = await createDataVolume(conn, pool, ignitionName, Buffer.from(spec.ignition, 'utf8'));
      check();
      const metadata: DevpivotMetadata = {
        session: this.sessionId,
        node: spec.name,
        image: image.path,
        created: new Date().toISOString(),
        volumes: [overlayName, ignitionName, logName],
        base: base.name,
        ...(spec.network?.sshPort !== undefined ? { ssh: `127.0.0.1:${spec.network.sshPort}` } : {}),
        owner: process.getuid?.() ?? 0,
      };
      const xml = domainXml({
        name,
        metadata,
        domainType: await this.#domainType(),
        memoryMiB: spec.memoryMiB,
        vcpus: spec.vcpus,
        firmware: spec.firmware,
        ...(spec.tpm ? { tpm: true } : {}),
        disk: overlayPath,
        ignition: { path: ignitionPath, method: fwCfgMethod(this.libVersion) },
        consoleLog: posix.join(poolDir, logName),
        kernel: spec.kernel,
        network: spec.network,
      });
      check();
      // Once defined, the node exists: it is returned (and recorded by the caller) rather than rolled back, and
      // the domain carries its volumes in its metadata, so every later removal finds them.
      const domain = await conn.defineDomain(xml);
      domain.free();
    } catch (error) {
      for (const volume of created) {
        const v = await pool.lookupVolume(volume).catch(() => undefined);
        await v?.delete().catch((e: Error) => this.warn(`cannot roll back volume ${volume}: ${e.message}`));
        v?.free();
      }
      throw error;
    }
    const node = new LibvirtNode(this, spec.name, name, consoleLogPath(this.#stateDir, this.sessionId, spec.name));
    this.#nodes.set(name, node);
    this.emit({ kind: 'vm.defined', node: spec.name, domain: name });
    return node;
  }

  #baseVolume(image: Awaited<ReturnType<typeof inspectQcow2>>, digest: string, ref: string) {
    let upload = this.#baseUploads.get(digest);
    if (!upload) {
      const lifetime = this.#inflight.signal;
      upload = this.#inflight.track(
        this.#ensurePool().then(({ pool }) =>
          ensureBaseVolume(
            this.#conn,
            pool,
            image,
            digest,
            (done, total) => this.emit({ kind: 'image.progress', ref, phase: 'upload', done, total }),
            lifetime,
          ),
        ),
      );
      this.#baseUploads.set(digest, upload);
      upload.catch(() => this.#baseUploads.delete(digest));
    }
    return upload;
  }

  /** Everything this session created: domains and volumes (also from earlier processes). Never throws. */
  async destroyAll(): Promise<void> {
    await this.#inflight.settle(60_000, (message) => this.warn(message));
    await Promise.all([...this.#nodes.values()].map((node) => node.removing()));
    for (const node of this.#nodes.values()) node.console.detach();
    try {
      const report = await cleanup(this.#conn, { session: this.sessionId });
      for (const error of report.errors) this.warn(`cleanup: ${error}`);
    } catch (error) {
      this.warn(`cleanup of session ${this.sessionId} failed: ${(error as Error).message}`);
    }
    this.#nodes.clear();
  }

  forget(node: LibvirtNode): void {
    this.#nodes.delete(node.domain);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#inflight.settle(60_000, (message) => this.warn(message));
    for (const node of this.#nodes.values()) node.console.detach();
    // Nodes still here stay running without devpivot: a reboot is a warm reset again, not a stop.
    await Promise.all([...this.#nodes.values()].map((node) => node.releaseReboots()));
    this.#pool?.then(({ pool }) => pool.free()).catch(() => {});
    await this.#unsubscribe?.().catch(() => {});
    await this.#conn.close();
  }
}
