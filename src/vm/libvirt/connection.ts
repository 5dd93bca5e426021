import { callAsync } from './call.js';
import { LibvirtError, VirErr } from './errors.js';
import { eventLoop } from './event-loop.js';
import { libvirt, type Ptr, registerCallback, takePointerArray, unregisterCallback } from './ffi.js';
import { Handle } from './handle.js';
import { StoragePool } from './storage.js';
import { Stream, StreamFlag } from './stream.js';

/** virDomainState */
export const DomainState = {
  noState: 0,
  running: 1,
  blocked: 2,
  paused: 3,
  shutdown: 4,
  shutoff: 5,
  crashed: 6,
  pmSuspended: 7,
} as const;

export const DOMAIN_STATE_NAMES = [
  'no state',
  'running',
  'blocked',
  'paused',
  'shutting down',
  'shut off',
  'crashed',
  'suspended',
];

/** virDomainEventType (lifecycle events). */
export const LifecycleEvent = {
  defined: 0,
  undefined: 1,
  started: 2,
  suspended: 3,
  resumed: 4,
  stopped: 5,
  shutdown: 6,
  pmSuspended: 7,
  crashed: 8,
} as const;

/** virDomainLifecycle and virDomainLifecycleAction, for setLifecycleAction. */
export const LifecycleType = { poweroff: 0, reboot: 1, crash: 2 } as const;
export const LifecycleAction = { destroy: 0, restart: 1 } as const;
const AFFECT_LIVE = 1;

export const UndefineFlag = { managedSave: 1, snapshotsMetadata: 2, nvram: 4, checkpointsMetadata: 16 } as const;
export const ConsoleFlag = { force: 1, safe: 2 } as const;
const METADATA_ELEMENT = 2;
const EVENT_ID_LIFECYCLE = 0;
const EVENT_ID_REBOOT = 1;

export const CloseReason = ['error', 'end of file', 'keepalive timeout', 'client close'] as const;

/** A virDomainPtr. The name is read once when wrapped (it never changes). */
export class Domain {
  readonly #handle: Handle;
  readonly name: string;
  readonly #uri: string;

  constructor(ptr: Ptr, uri: string) {
    this.#handle = new Handle(ptr, (p) => libvirt().virDomainFree(p));
    this.name = libvirt().virDomainGetName(ptr) ?? '';
    this.#uri = uri;
  }

  get ptr(): Ptr {
    return this.#handle.ptr;
  }

  async start(): Promise<void> {
    await callAsync(`start of ${this.name}`, libvirt().virDomainCreate, [this.ptr], { uri: this.#uri });
  }

  /** Start the domain paused (so a console can attach before the first byte), see resume(). */
  async startPaused(): Promise<void> {
    await callAsync(`start of ${this.name}`, libvirt().virDomainCreateWithFlags, [this.ptr, 1], { uri: this.#uri });
  }

  async resume(): Promise<void> {
    await callAsync(`resume of ${this.name}`, libvirt().virDomainResume, [this.ptr], { uri: this.#uri });
  }

  /** Stop the vCPUs; the guest stays in memory as it is (resume() goes on). */
  async suspend(): Promise<void> {
    await callAsync(`suspend of ${this.name}`, libvirt().virDomainSuspend, [this.ptr], { uri: this.#uri });
  }

  /** What QEMU does when the running guest reboots (`type` reboot) or powers off; the definition is unchanged. */
  async setLiveLifecycleAction(type: number, action: number): Promise<void> {
    await callAsync(
      `lifecycle action of ${this.name}`,
      libvirt().virDomainSetLifecycleAction,
      [this.ptr, type, action, AFFECT_LIVE],
      { uri: this.#uri },
    );
  }

  async isActive(): Promise<boolean> {
    return (
      (await callAsync(`state of ${this.name}`, libvirt().virDomainIsActive, [this.ptr], { uri: this.#uri })) === 1
    );
  }

  /** Replace the element under `namespace` in <metadata> (flags: 0 current, 1 live, 2 config). */
  async setMetadata(xml: string, key: string, namespace: string, flags: number): Promise<void> {
    await callAsync(
      `metadata update of ${this.name}`,
      libvirt().virDomainSetMetadata,
      [this.ptr, METADATA_ELEMENT, xml, key, namespace, flags],
      { uri: this.#uri },
    );
  }

  async destroy(): Promise<void> {
    await callAsync(`destroy of ${this.name}`, libvirt().virDomainDestroy, [this.ptr], { uri: this.#uri });
  }

  async undefine(flags: number): Promise<void> {
    await callAsync(`undefine of ${this.name}`, libvirt().virDomainUndefineFlags, [this.ptr, flags], {
      uri: this.#uri,
    });
  }

  async state(): Promise<{ state: number; reason: number }> {
    const state: [number] = [0];
    const reason: [number] = [0];
    await callAsync(`state of ${this.name}`, libvirt().virDomainGetState, [this.ptr, state, reason, 0], {
      uri: this.#uri,
    });
    return { state: state[0], reason: reason[0] };
  }

  async xml(): Promise<string> {
    return (await callAsync(`XML of ${this.name}`, libvirt().virDomainGetXMLDesc, [this.ptr, 0], { uri: this.#uri }))!;
  }

  /** The element stored under namespace `uri` in <metadata>, or undefined when there is none. */
  async metadata(namespace: string): Promise<string | undefined> {
    try {
      return (
        (await callAsync(
          `metadata of ${this.name}`,
          libvirt().virDomainGetMetadata,
          [this.ptr, METADATA_ELEMENT, namespace, 0],
          {
            uri: this.#uri,
          },
        )) ?? undefined
      );
    } catch (error) {
      if (error instanceof LibvirtError && error.is(VirErr.noDomainMetadata)) return undefined;
      throw error;
    }
  }

  /** Connect `stream` (non-blocking) to the domain's serial console. */
  async openConsole(stream: Stream, flags = 0): Promise<void> {
    await callAsync(`console of ${this.name}`, libvirt().virDomainOpenConsole, [this.ptr, null, stream.ptr, flags], {
      uri: this.#uri,
    });
  }

  free(): void {
    this.#handle.free();
  }
}

export interface DomainEventHandlers {
  /** Lifecycle event: `event` is a LifecycleEvent, `detail` its virDomainEvent*DetailType. */
  lifecycle?: (domain: string, event: number, detail: number) => void;
  reboot?: (domain: string) => void;
}

/** A virConnectPtr plus the event loop it needs. */
export class Connection {
  readonly uri: string;
  readonly #handle: Handle;
  #closeCallback: Ptr | undefined;

  private constructor(ptr: Ptr, uri: string) {
    this.uri = uri;
    this.#handle = new Handle(ptr, (p) => libvirt().virConnectClose(p));
  }

  /** Open `uri` (on a worker thread: connecting may block). The event loop runs while the connection is open. */
  static async open(uri: string): Promise<Connection> {
    eventLoop.acquire();
    try {
      const ptr = await callAsync('connect', libvirt().virConnectOpen, [uri], { uri });
      const conn = new Connection(ptr!, uri);
      // Detect a dead daemon or network within ~15 s even when no call is in flight (remote URIs).
      libvirt().virConnectSetKeepAlive(ptr!, 5, 3);
      return conn;
    } catch (error) {
      await eventLoop.release();
      throw error;
    }
  }

  get ptr(): Ptr {
    return this.#handle.ptr;
  }

  get closed(): boolean {
    return this.#handle.freed;
  }

  isAlive(): boolean {
    return !this.#handle.freed && libvirt().virConnectIsAlive(this.ptr) === 1;
  }

  /** libvirt version of the daemon, as major * 1e6 + minor * 1e3 + micro. */
  async libVersion(): Promise<number> {
    const out: [number] = [0];
    await callAsync('version query', libvirt().virConnectGetLibVersion, [this.ptr, out], { uri: this.uri });
    return out[0];
  }

  /** The hypervisor's capabilities XML (which domain types, e.g. kvm, it offers). */
  async capabilities(): Promise<string> {
    return (await callAsync('capabilities query', libvirt().virConnectGetCapabilities, [this.ptr], { uri: this.uri }))!;
  }

  async lookupDomain(name: string): Promise<Domain | undefined> {
    try {
      const ptr = await callAsync(`lookup of domain ${name}`, libvirt().virDomainLookupByName, [this.ptr, name], {
        uri: this.uri,
      });
      return new Domain(ptr!, this.uri);
    } catch (error) {
      if (error instanceof LibvirtError && error.is(VirErr.noDomain)) return undefined;
      throw error;
    }
  }

  /** Define a persistent domain; libvirt validates the XML against its schema (VIR_DOMAIN_DEFINE_VALIDATE). */
  async defineDomain(xml: string): Promise<Domain> {
    const ptr = await callAsync('domain definition', libvirt().virDomainDefineXMLFlags, [this.ptr, xml, 1], {
      uri: this.uri,
    });
    return new Domain(ptr!, this.uri);
  }

  /** Every domain, active or not. The caller frees them. */
  async domains(): Promise<Domain[]> {
    const out: [Ptr | null] = [null];
    const count = await callAsync('list domains', libvirt().virConnectListAllDomains, [this.ptr, out, 0], {
      uri: this.uri,
    });
    if (out[0] === null) return [];
    return takePointerArray(out[0], count).map((ptr) => new Domain(ptr, this.uri));
  }

  async lookupPool(name: string): Promise<StoragePool | undefined> {
    try {
      const ptr = await callAsync(`lookup of pool ${name}`, libvirt().virStoragePoolLookupByName, [this.ptr, name], {
        uri: this.uri,
      });
      return new StoragePool(ptr!, this.uri);
    } catch (error) {
      if (error instanceof LibvirtError && error.is(VirErr.noStoragePool)) return undefined;
      throw error;
    }
  }

  async definePool(xml: string): Promise<StoragePool> {
    const ptr = await callAsync('pool definition', libvirt().virStoragePoolDefineXML, [this.ptr, xml, 0], {
      uri: this.uri,
    });
    return new StoragePool(ptr!, this.uri);
  }

  newStream(nonBlocking: boolean): Stream {
    return Stream.create(this.ptr, this.uri, nonBlocking ? StreamFlag.nonBlock : 0);
  }

  /**
   * Lifecycle and reboot events for every domain of this connection. The handlers run on the main thread while
   * the event-loop worker waits, so they only read the domain name and hand off. Returns an async unsubscribe.
   */
  async subscribeDomainEvents(handlers: DomainEventHandlers): Promise<() => Promise<void>> {
    const lib = libvirt();
    const registrations: { id: number; callback: Ptr }[] = [];
    const nameOf = (dom: Ptr) => lib.virDomainGetName(dom) ?? '';
    if (handlers.lifecycle) {
      const onLifecycle = handlers.lifecycle;
      const callback = registerCallback(
        'virConnectDomainEventCallback',
        (_c: Ptr, dom: Ptr, event: number, detail: number) => {
          onLifecycle(nameOf(dom), event, detail);
          return 0;
        },
      );
      const id = await callAsync('event registration', lib.virConnectDomainEventRegisterAny, [
        this.ptr,
        null,
        EVENT_ID_LIFECYCLE,
        callback,
        null,
        null,
      ]);
      registrations.push({ id, callback });
    }
    if (handlers.reboot) {
      const onReboot = handlers.reboot;
      const callback = registerCallback('virConnectDomainEventGenericCallback', (_c: Ptr, dom: Ptr) => {
        onReboot(nameOf(dom));
      });
      const id = await callAsync('event registration', lib.virConnectDomainEventRegisterAny, [
        this.ptr,
        null,
        EVENT_ID_REBOOT,
        callback,
        null,
        null,
      ]);
      registrations.push({ id, callback });
    }
    return async () => {
      for (const { id, callback } of registrations.splice(0)) {
        if (!this.closed) {
          await callAsync('event deregistration', lib.virConnectDomainEventDeregisterAny, [this.ptr, id]).catch(
            () => {},
          );
        }
        setImmediate(() => unregisterCallback(callback));
      }
    };
  }

  /**
   * Called once when the connection drops (daemon restarted, network gone, keepalive timeout). libvirt holds a
   * lock while it runs the close callback, so (un)registration runs on a worker thread, never blocking the main
   * thread the callback needs.
   */
  async onClose(handler: (reason: string) => void): Promise<void> {
    if (this.#closeCallback !== undefined) throw new Error('close handler already registered');
    this.#closeCallback = registerCallback('virConnectCloseFunc', (_c: Ptr, reason: number) => {
      handler(CloseReason[reason] ?? `reason ${reason}`);
    });
    await callAsync(
      'close callback registration',
      libvirt().virConnectRegisterCloseCallback,
      [this.ptr, this.#closeCallback, null, null],
      { uri: this.uri },
    );
  }

  /** Close the connection (on a worker thread) and let the event loop stop when nobody else needs it. */
  async close(): Promise<void> {
    if (this.#handle.freed) return;
    const ptr = this.ptr;
    if (this.#closeCallback !== undefined) {
      const callback = this.#closeCallback;
      this.#closeCallback = undefined;
      await callAsync('close callback removal', libvirt().virConnectUnregisterCloseCallback, [ptr, callback]).catch(
        () => {},
      );
      setImmediate(() => unregisterCallback(callback));
    }
    const detached = this.#handle.detach();
    await new Promise<void>((resolve) => {
      libvirt().virConnectClose.async(detached, () => resolve());
    });
    await eventLoop.release();
  }
}
