import { DevpivotError, type ErrorCode } from '../../core/errors.js';
import { decodeError, libvirt, type Ptr, type RawError, registerCallback } from './ffi.js';

/** libvirt's virErrorNumber values devpivot reacts to. */
export const VirErr = {
  systemError: 38,
  rpc: 39,
  noDomain: 42,
  authFailed: 45,
  noStoragePool: 49,
  noStorageVol: 50,
  operationInvalid: 55,
  configUnsupported: 67,
  noDomainMetadata: 80,
  operationUnsupported: 84,
  accessDenied: 88,
  storageVolExist: 90,
  noConnect: 5,
  noSupport: 3,
  operationFailed: 9,
  xmlError: 27,
} as const;

/** libvirt's virErrorDomain values used for classification. */
export const VirFrom = { rpc: 7, qemu: 10, remote: 13, storage: 18 } as const;

export interface LibvirtErrorDetail {
  /** virErrorNumber */
  code: number;
  /** virErrorDomain: which part of libvirt raised it */
  domain: number;
  message: string;
}

/** A failed libvirt call: devpivot's code/message/hint plus libvirt's own code, domain and message. */
export class LibvirtError extends DevpivotError {
  readonly libvirt: LibvirtErrorDetail;
  readonly operation: string;

  constructor(
    code: ErrorCode,
    message: string,
    detail: LibvirtErrorDetail,
    operation: string,
    options: { hint?: string; cause?: unknown } = {},
  ) {
    super(code, message, options);
    this.name = 'LibvirtError';
    this.libvirt = detail;
    this.operation = operation;
  }

  is(code: number): boolean {
    return this.libvirt.code === code;
  }
}

/*
 * libvirt keeps the last error per thread, and async calls run on worker threads, so virGetLastError() on the
 * main thread would read the wrong slot. Instead a global error handler (virSetErrorFunc) records every error:
 * libvirt calls it at the public API boundary, with no internal lock held, on the failing thread; koffi runs it
 * on the main thread before the async call's completion. Calls are serialised (see call.ts), so the newest error
 * recorded after a call began belongs to that call.
 */
interface Recorded extends LibvirtErrorDetail {
  seq: number;
}

let sequence = 0;
const recent: Recorded[] = [];
let handler: Ptr | undefined;

export function installErrorHandler(): void {
  if (handler !== undefined) return;
  handler = registerCallback('virErrorFunc', (_user: null, error: Ptr) => {
    const raw: RawError = decodeError(error);
    sequence += 1;
    recent.push({ seq: sequence, code: raw.code, domain: raw.domain, message: raw.message ?? 'unknown libvirt error' });
    if (recent.length > 32) recent.shift();
  });
  // Also silences libvirt's default handler, which prints every error to stderr.
  libvirt().virSetErrorFunc(null, handler);
}

export function errorMark(): number {
  return sequence;
}

export function errorSince(mark: number): LibvirtErrorDetail | undefined {
  const entry = recent.at(-1);
  if (!entry || entry.seq <= mark) return undefined;
  return { code: entry.code, domain: entry.domain, message: entry.message };
}

/** Turn a libvirt failure into a user-facing error with a stable code and a hint (the catalog's, or a specific one). */
export function toLibvirtError(operation: string, detail: LibvirtErrorDetail | undefined, uri?: string): LibvirtError {
  const d = detail ?? { code: 1, domain: 0, message: 'libvirt reported a failure without details' };
  const where = uri ? ` (${uri})` : '';
  const text = d.message;
  if (/Failed to connect socket|Connection refused|No such file or directory.*sock|no connection driver/i.test(text)) {
    if (/Permission denied/i.test(text)) {
      return new LibvirtError(
        'LIBVIRT_PERMISSION',
        `permission denied on the libvirt socket${where}: ${text}`,
        d,
        operation,
      );
    }
    return new LibvirtError('LIBVIRT_UNREACHABLE', `cannot reach libvirt${where}: ${text}`, d, operation);
  }
  if (d.code === VirErr.accessDenied || d.code === VirErr.authFailed || /Permission denied/i.test(text)) {
    return new LibvirtError(
      'LIBVIRT_PERMISSION',
      `permission denied during ${operation}${where}: ${text}`,
      d,
      operation,
      {
        hint:
          'under qemu:///system the qemu process runs as an unprivileged user: images must be in a storage pool or ' +
          'readable by it; for the socket, run as root or join the "libvirt" group',
      },
    );
  }
  if (d.code === VirErr.configUnsupported && /fw_cfg|fwcfg|sysinfo/i.test(text)) {
    return new LibvirtError(
      'VM_FWCFG_UNSUPPORTED',
      `this hypervisor cannot pass Ignition through fw_cfg: ${text}`,
      d,
      operation,
    );
  }
  return new LibvirtError('LIBVIRT_ERROR', `libvirt ${operation} failed${where}: ${text}`, d, operation);
}
