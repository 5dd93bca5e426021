import { DevpivotError } from '../core/errors.js';

/**
 * Registry errors as the distribution spec lists them ("Error Codes"): a fixed code, the HTTP status it is sent
 * with, a message and an optional detail. Handlers throw these; the router turns them into the JSON body.
 * (Structure after go-containerregistry's pkg/registry/error.go: fixed values, one writer.)
 */
export type RegistryErrorCode =
  | 'BLOB_UNKNOWN'
  | 'BLOB_UPLOAD_INVALID'
  | 'BLOB_UPLOAD_UNKNOWN'
  | 'DIGEST_INVALID'
  | 'MANIFEST_BLOB_UNKNOWN'
  | 'MANIFEST_INVALID'
  | 'MANIFEST_UNKNOWN'
  | 'NAME_INVALID'
  | 'NAME_UNKNOWN'
  | 'SIZE_INVALID'
  | 'UNAUTHORIZED'
  | 'DENIED'
  | 'UNSUPPORTED'
  | 'TOOMANYREQUESTS'
  /** distribution's errcode.ErrorCodeUnavailable (503): a pull-through upstream failed. */
  | 'UNAVAILABLE';

const HINTS: Partial<Record<RegistryErrorCode, string>> = {
  MANIFEST_BLOB_UNKNOWN: 'push every config and layer blob (and every child manifest of an index) before the manifest',
  DIGEST_INVALID: 'the content does not hash to the digest given: check the digest and resend the content',
  NAME_INVALID:
    'repository names are lowercase path components like "devpivot/os" (spec: [a-z0-9]+ with . _ __ - separators)',
};

/** Also a DevpivotError, so store callers outside HTTP (oscontainer push) get a stable code and a hint. */
export class RegistryError extends DevpivotError {
  declare readonly code: RegistryErrorCode;

  constructor(
    readonly status: number,
    code: RegistryErrorCode,
    message: string,
    readonly detail?: unknown,
    /** Extra response headers (e.g. `Content-Range` on a 416, `Range` on an out-of-order chunk). */
    readonly headers: Record<string, string> = {},
  ) {
    super(code, message, { hint: HINTS[code] });
    this.name = 'RegistryError';
  }

  body(): string {
    const entry: Record<string, unknown> = { code: this.code, message: this.message };
    if (this.detail !== undefined) entry.detail = this.detail;
    return JSON.stringify({ errors: [entry] });
  }
}

export const blobUnknown = (digest: string) =>
  new RegistryError(404, 'BLOB_UNKNOWN', 'blob unknown to registry', { digest });
export const manifestUnknown = (reference: string) =>
  new RegistryError(404, 'MANIFEST_UNKNOWN', 'manifest unknown to registry', { reference });
export const nameUnknown = (name: string) =>
  new RegistryError(404, 'NAME_UNKNOWN', 'repository name not known to registry', { name });
export const uploadUnknown = (id: string) =>
  new RegistryError(404, 'BLOB_UPLOAD_UNKNOWN', 'blob upload unknown to registry', { uuid: id });
export const digestInvalid = (message: string, detail?: unknown) =>
  new RegistryError(400, 'DIGEST_INVALID', message, detail);
export const manifestInvalid = (message: string, detail?: unknown) =>
  new RegistryError(400, 'MANIFEST_INVALID', message, detail);
export const unsupported = (message: string, status = 405) => new RegistryError(status, 'UNSUPPORTED', message);
