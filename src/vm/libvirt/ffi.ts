/**
 * The libvirt C API as koffi declarations. This is the ONLY module that imports koffi (docs/ARCHITECTURE.md
 * "## Layers"; test/architecture.test.ts checks it): everything above it goes through the typed wrappers in this
 * folder, which free handles, turn failures into LibvirtError and run blocking calls on libuv worker threads
 * (`.async`).
 *
 * Pointers are koffi 3 BigInts (NULL is `null`). Strings that libvirt allocates for the caller are declared with
 * a disposable type so koffi frees them after converting them to JS strings.
 */
import koffi, { type LibraryHandle, type TypeObject } from 'koffi';
import { registerImmediateExit } from '../../core/exit.js';

/** An opaque libvirt handle (virConnectPtr, virDomainPtr, ...). */
export type Ptr = bigint;

type Callback<R> = (error: unknown, result: R) => void;
/** A C function: callable on the main thread, or on a worker thread with `.async(...args, cb)`. */
export type CFn<A extends unknown[], R> = ((...args: A) => R) & { async: (...args: [...A, Callback<R>]) => void };

let loaded: ReturnType<typeof declare> | undefined;

/** The libvirt functions, loaded on first use so that importing this module never fails. */
export function libvirt(): ReturnType<typeof declare> {
  loaded ??= declare();
  return loaded;
}

const HeapStr = 'HeapStr';

function declare() {
  let lib: LibraryHandle;
  try {
    lib = koffi.load('libvirt.so.0');
  } catch (error) {
    throw Object.assign(new Error(`cannot load libvirt.so.0: ${(error as Error).message}`), { code: 'ENOLIBVIRT' });
  }
  // From now on a worker thread may be held by a libvirt call that never returns: exit without joining it.
  const exit = koffi.load('libc.so.6').func('void _exit(int status)') as (status: number) => void;
  registerImmediateExit((code) => exit(code));
  koffi.disposable(HeapStr, 'str', koffi.free);
  koffi.proto('void virErrorFunc(void *userData, void *error)');
  koffi.proto('void virFreeCallback(void *opaque)');
  koffi.proto('void virEventTimeoutCallback(int timer, void *opaque)');
  koffi.proto('int virConnectDomainEventCallback(void *conn, void *dom, int event, int detail, void *opaque)');
  koffi.proto('void virConnectDomainEventGenericCallback(void *conn, void *dom, void *opaque)');
  koffi.proto('void virConnectCloseFunc(void *conn, int reason, void *opaque)');
  koffi.proto('void virStreamEventCallback(void *stream, int events, void *opaque)');
  koffi.proto(
    'void virConnectDomainQemuMonitorEventCallback(void *conn, void *dom, const char *event, long long seconds, unsigned int micros, const char *details, void *opaque)',
  );

  const f = <A extends unknown[], R>(definition: string) => lib.func(definition) as unknown as CFn<A, R>;
  return {
    // errors
    virSetErrorFunc: f<[userData: null, handler: Ptr | null], void>(
      'void virSetErrorFunc(void *userData, virErrorFunc *handler)',
    ),
    // event loop
    virEventRegisterDefaultImpl: f<[], number>('int virEventRegisterDefaultImpl(void)'),
    virEventRunDefaultImpl: f<[], number>('int virEventRunDefaultImpl(void)'),
    virEventAddTimeout: f<[frequencyMs: number, cb: Ptr, opaque: null, ff: null], number>(
      'int virEventAddTimeout(int frequency, virEventTimeoutCallback *cb, void *opaque, virFreeCallback *ff)',
    ),
    virEventUpdateTimeout: f<[timer: number, frequencyMs: number], void>(
      'void virEventUpdateTimeout(int timer, int frequency)',
    ),
    virEventRemoveTimeout: f<[timer: number], number>('int virEventRemoveTimeout(int timer)'),
    // connections
    virConnectOpen: f<[uri: string], Ptr | null>('void *virConnectOpen(const char *name)'),
    virConnectClose: f<[conn: Ptr], number>('int virConnectClose(void *conn)'),
    virConnectGetLibVersion: f<[conn: Ptr, out: [number]], number>(
      'int virConnectGetLibVersion(void *conn, _Out_ unsigned long *libVer)',
    ),
    virConnectGetURI: f<[conn: Ptr], string | null>(`${HeapStr} virConnectGetURI(void *conn)`),
    virConnectGetCapabilities: f<[conn: Ptr], string | null>(`${HeapStr} virConnectGetCapabilities(void *conn)`),
    virConnectIsAlive: f<[conn: Ptr], number>('int virConnectIsAlive(void *conn)'),
    virConnectSetKeepAlive: f<[conn: Ptr, intervalS: number, count: number], number>(
      'int virConnectSetKeepAlive(void *conn, int interval, unsigned int count)',
    ),
    virConnectRegisterCloseCallback: f<[conn: Ptr, cb: Ptr, opaque: null, ff: null], number>(
      'int virConnectRegisterCloseCallback(void *conn, virConnectCloseFunc *cb, void *opaque, virFreeCallback *ff)',
    ),
    virConnectUnregisterCloseCallback: f<[conn: Ptr, cb: Ptr], number>(
      'int virConnectUnregisterCloseCallback(void *conn, virConnectCloseFunc *cb)',
    ),
    virConnectDomainEventRegisterAny: f<
      [conn: Ptr, dom: Ptr | null, eventId: number, cb: Ptr, opaque: null, ff: null],
      number
    >(
      'int virConnectDomainEventRegisterAny(void *conn, void *dom, int eventID, void *cb, void *opaque, virFreeCallback *ff)',
    ),
    virConnectDomainEventDeregisterAny: f<[conn: Ptr, callbackId: number], number>(
      'int virConnectDomainEventDeregisterAny(void *conn, int callbackID)',
    ),
    virConnectListAllDomains: f<[conn: Ptr, out: [Ptr | null], flags: number], number>(
      'int virConnectListAllDomains(void *conn, _Out_ void **domains, unsigned int flags)',
    ),
    // domains
    virDomainLookupByName: f<[conn: Ptr, name: string], Ptr | null>(
      'void *virDomainLookupByName(void *conn, const char *name)',
    ),
    virDomainDefineXMLFlags: f<[conn: Ptr, xml: string, flags: number], Ptr | null>(
      'void *virDomainDefineXMLFlags(void *conn, const char *xml, unsigned int flags)',
    ),
    virDomainCreate: f<[dom: Ptr], number>('int virDomainCreate(void *dom)'),
    virDomainCreateWithFlags: f<[dom: Ptr, flags: number], number>(
      'int virDomainCreateWithFlags(void *dom, unsigned int flags)',
    ),
    virDomainResume: f<[dom: Ptr], number>('int virDomainResume(void *dom)'),
    virDomainSuspend: f<[dom: Ptr], number>('int virDomainSuspend(void *dom)'),
    virDomainSetLifecycleAction: f<[dom: Ptr, type: number, action: number, flags: number], number>(
      'int virDomainSetLifecycleAction(void *dom, unsigned int type, unsigned int action, unsigned int flags)',
    ),
    virDomainIsActive: f<[dom: Ptr], number>('int virDomainIsActive(void *dom)'),
    virDomainSetMetadata: f<
      [dom: Ptr, type: number, metadata: string, key: string, uri: string, flags: number],
      number
    >(
      'int virDomainSetMetadata(void *dom, int type, const char *metadata, const char *key, const char *uri, unsigned int flags)',
    ),
    virDomainDestroy: f<[dom: Ptr], number>('int virDomainDestroy(void *dom)'),
    virDomainUndefineFlags: f<[dom: Ptr, flags: number], number>(
      'int virDomainUndefineFlags(void *dom, unsigned int flags)',
    ),
    virDomainFree: f<[dom: Ptr], number>('int virDomainFree(void *dom)'),
    virDomainGetName: f<[dom: Ptr], string | null>('const char *virDomainGetName(void *dom)'),
    virDomainGetState: f<[dom: Ptr, state: [number], reason: [number], flags: number], number>(
      'int virDomainGetState(void *dom, _Out_ int *state, _Out_ int *reason, unsigned int flags)',
    ),
    virDomainGetXMLDesc: f<[dom: Ptr, flags: number], string | null>(
      `${HeapStr} virDomainGetXMLDesc(void *dom, unsigned int flags)`,
    ),
    virDomainGetMetadata: f<[dom: Ptr, type: number, uri: string, flags: number], string | null>(
      `${HeapStr} virDomainGetMetadata(void *dom, int type, const char *uri, unsigned int flags)`,
    ),
    virDomainOpenConsole: f<[dom: Ptr, device: string | null, stream: Ptr, flags: number], number>(
      'int virDomainOpenConsole(void *dom, const char *dev_name, void *st, unsigned int flags)',
    ),
    // storage
    virStoragePoolLookupByName: f<[conn: Ptr, name: string], Ptr | null>(
      'void *virStoragePoolLookupByName(void *conn, const char *name)',
    ),
    virStoragePoolDefineXML: f<[conn: Ptr, xml: string, flags: number], Ptr | null>(
      'void *virStoragePoolDefineXML(void *conn, const char *xml, unsigned int flags)',
    ),
    virStoragePoolBuild: f<[pool: Ptr, flags: number], number>(
      'int virStoragePoolBuild(void *pool, unsigned int flags)',
    ),
    virStoragePoolCreate: f<[pool: Ptr, flags: number], number>(
      'int virStoragePoolCreate(void *pool, unsigned int flags)',
    ),
    virStoragePoolSetAutostart: f<[pool: Ptr, autostart: number], number>(
      'int virStoragePoolSetAutostart(void *pool, int autostart)',
    ),
    virStoragePoolIsActive: f<[pool: Ptr], number>('int virStoragePoolIsActive(void *pool)'),
    virStoragePoolRefresh: f<[pool: Ptr, flags: number], number>(
      'int virStoragePoolRefresh(void *pool, unsigned int flags)',
    ),
    virStoragePoolGetXMLDesc: f<[pool: Ptr, flags: number], string | null>(
      `${HeapStr} virStoragePoolGetXMLDesc(void *pool, unsigned int flags)`,
    ),
    virStoragePoolListAllVolumes: f<[pool: Ptr, out: [Ptr | null], flags: number], number>(
      'int virStoragePoolListAllVolumes(void *pool, _Out_ void **vols, unsigned int flags)',
    ),
    virStoragePoolFree: f<[pool: Ptr], number>('int virStoragePoolFree(void *pool)'),
    virStorageVolLookupByName: f<[pool: Ptr, name: string], Ptr | null>(
      'void *virStorageVolLookupByName(void *pool, const char *name)',
    ),
    virStorageVolCreateXML: f<[pool: Ptr, xml: string, flags: number], Ptr | null>(
      'void *virStorageVolCreateXML(void *pool, const char *xml, unsigned int flags)',
    ),
    virStorageVolGetName: f<[vol: Ptr], string | null>('const char *virStorageVolGetName(void *vol)'),
    virStorageVolGetPath: f<[vol: Ptr], string | null>(`${HeapStr} virStorageVolGetPath(void *vol)`),
    virStorageVolDelete: f<[vol: Ptr, flags: number], number>('int virStorageVolDelete(void *vol, unsigned int flags)'),
    virStorageVolUpload: f<[vol: Ptr, stream: Ptr, offset: number, length: number, flags: number], number>(
      'int virStorageVolUpload(void *vol, void *stream, unsigned long long offset, unsigned long long length, unsigned int flags)',
    ),
    virStorageVolDownload: f<[vol: Ptr, stream: Ptr, offset: number, length: number, flags: number], number>(
      'int virStorageVolDownload(void *vol, void *stream, unsigned long long offset, unsigned long long length, unsigned int flags)',
    ),
    virStorageVolFree: f<[vol: Ptr], number>('int virStorageVolFree(void *vol)'),
    // streams
    virStreamNew: f<[conn: Ptr, flags: number], Ptr | null>('void *virStreamNew(void *conn, unsigned int flags)'),
    virStreamSend: f<[stream: Ptr, data: Ptr, nbytes: number], number>(
      'int virStreamSend(void *stream, void *data, size_t nbytes)',
    ),
    virStreamRecv: f<[stream: Ptr, data: Ptr, nbytes: number], number>(
      'int virStreamRecv(void *stream, void *data, size_t nbytes)',
    ),
    virStreamFinish: f<[stream: Ptr], number>('int virStreamFinish(void *stream)'),
    virStreamAbort: f<[stream: Ptr], number>('int virStreamAbort(void *stream)'),
    virStreamFree: f<[stream: Ptr], number>('int virStreamFree(void *stream)'),
    virStreamEventAddCallback: f<[stream: Ptr, events: number, cb: Ptr, opaque: null, ff: null], number>(
      'int virStreamEventAddCallback(void *stream, int events, virStreamEventCallback *cb, void *opaque, virFreeCallback *ff)',
    ),
    virStreamEventRemoveCallback: f<[stream: Ptr], number>('int virStreamEventRemoveCallback(void *stream)'),
  };
}

export type Libvirt = ReturnType<typeof declare>;

let loadedQemu: ReturnType<typeof declareQemu> | null | undefined;

/**
 * libvirt-qemu's QEMU monitor events (the raw QMP events of a domain, which say why QEMU stopped a guest), or
 * undefined where the library is missing: its callers then do without.
 */
export function libvirtQemu(): ReturnType<typeof declareQemu> | undefined {
  if (loadedQemu === undefined) {
    libvirt();
    try {
      loadedQemu = declareQemu(koffi.load('libvirt-qemu.so.0'));
    } catch {
      loadedQemu = null;
    }
  }
  return loadedQemu ?? undefined;
}

function declareQemu(lib: LibraryHandle) {
  const f = <A extends unknown[], R>(definition: string) => lib.func(definition) as unknown as CFn<A, R>;
  return {
    virConnectDomainQemuMonitorEventRegister: f<
      [conn: Ptr, dom: Ptr | null, event: string, cb: Ptr, opaque: null, ff: null, flags: number],
      number
    >(
      'int virConnectDomainQemuMonitorEventRegister(void *conn, void *dom, const char *event, virConnectDomainQemuMonitorEventCallback *cb, void *opaque, virFreeCallback *freecb, unsigned int flags)',
    ),
    virConnectDomainQemuMonitorEventDeregister: f<[conn: Ptr, callbackId: number], number>(
      'int virConnectDomainQemuMonitorEventDeregister(void *conn, int callbackID)',
    ),
  };
}

/** The fields of `struct _virError` that devpivot reads (the deprecated pointers are skipped, not reordered). */
let virErrorType: TypeObject | undefined;

export interface RawError {
  code: number;
  domain: number;
  message: string | null;
  level: number;
}

/** Decode a `virErrorPtr` handed to an error callback. */
export function decodeError(pointer: Ptr): RawError {
  virErrorType ??= koffi.struct('virError', {
    code: 'int',
    domain: 'int',
    message: 'char *',
    level: 'int',
    conn: 'void *',
    dom: 'void *',
    str1: 'char *',
    str2: 'char *',
    str3: 'char *',
    int1: 'int',
    int2: 'int',
    net: 'void *',
  });
  const value = koffi.decode(pointer, virErrorType) as RawError;
  return { code: value.code, domain: value.domain, message: value.message, level: value.level };
}

export type CallbackKind =
  | 'virErrorFunc'
  | 'virEventTimeoutCallback'
  | 'virConnectDomainEventCallback'
  | 'virConnectDomainEventGenericCallback'
  | 'virConnectCloseFunc'
  | 'virStreamEventCallback'
  | 'virConnectDomainQemuMonitorEventCallback';

/**
 * Make a JS function callable from C. libvirt may call it on the event-loop worker thread: koffi then queues the
 * call to the main thread and the worker waits, so the callback must be quick and must not block.
 */
export function registerCallback(kind: CallbackKind, fn: (...args: never[]) => unknown): Ptr {
  libvirt();
  return koffi.register(fn as (...args: unknown[]) => unknown, koffi.pointer(koffi.type(kind))) as unknown as Ptr;
}

export function unregisterCallback(pointer: Ptr): void {
  koffi.unregister(pointer as never);
}

/** Read `count` pointers from a C array that libvirt allocated, then free the array itself. */
export function takePointerArray(array: Ptr, count: number): Ptr[] {
  const items = count > 0 ? (koffi.decode(array, 'void *', count) as Ptr[]) : [];
  koffi.free(array as never);
  return items;
}

/** Native memory for stream I/O: async calls must not point into JS-managed buffers. */
export interface NativeBuffer {
  readonly pointer: Ptr;
  readonly bytes: Buffer;
  free(): void;
}

export function allocNative(size: number): NativeBuffer {
  const pointer = koffi.alloc('uint8_t', size) as unknown as Ptr;
  const bytes = Buffer.from(koffi.view(pointer as never, size));
  let freed = false;
  return {
    pointer,
    bytes,
    free() {
      if (freed) return;
      freed = true;
      koffi.free(pointer as never);
    },
  };
}
