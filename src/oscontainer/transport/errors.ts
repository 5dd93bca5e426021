/**
 * How the transport's failures reach the user: fixed codes with hints. Unreachable (no HTTP answer), auth
 * (401 after the dance, 403, token server trouble), 404 as NOT_FOUND, anything else non-2xx as REGISTRY_ERROR
 * with the registry's own error codes (distribution spec "Error Codes") in the message.
 */
import { DevpivotError } from '../../core/errors.js';

export function authFailed(registry: string, repository: string, why: string): DevpivotError {
  return new DevpivotError('REGISTRY_AUTH_FAILED', `cannot authenticate to ${registry}/${repository}: ${why}`, {
    hint:
      'log in with `skopeo login` / `podman login` (or set REGISTRY_AUTH_FILE to an auth.json); ' +
      'credentials are read from REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, ' +
      '~/.config/containers/auth.json and ~/.docker/config.json',
  });
}

/** fetch() itself failed (refused, reset, DNS, TLS): the registry is not there as addressed. */
export function unreachable(registry: string, url: string, baseUrl: string, error: unknown): DevpivotError {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const tls = baseUrl.startsWith('https') ? ' (for a plain-HTTP registry pass --insecure)' : '';
  return new DevpivotError(
    'REGISTRY_UNREACHABLE',
    `cannot reach registry ${registry} at ${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
    { hint: `check that the registry runs and the address is right${tls}`, cause: error },
  );
}

/** A non-2xx answer, with its status: retry.ts retries a 5xx or a 429. */
export class RegistryResponseError extends DevpivotError {
  constructor(
    readonly status: number,
    code: 'REGISTRY_AUTH_FAILED' | 'NOT_FOUND' | 'REGISTRY_ERROR',
    message: string,
    hint: string,
  ) {
    super(code, message, { hint });
    this.name = 'RegistryResponseError';
  }
}

/** A non-2xx answer the caller did not expect; reads (and so consumes) the body for the registry's errors. */
export async function responseError(
  method: string,
  url: string,
  registry: string,
  repository: string,
  response: Response,
): Promise<RegistryResponseError> {
  let detail = '';
  try {
    const text = await response.text();
    const body = JSON.parse(text) as { errors?: Array<{ code: string; message: string }> };
    detail = (body.errors ?? []).map((e) => `${e.code}: ${e.message}`).join('; ');
  } catch {
    // not an error document
  }
  const code =
    response.status === 403 ? 'REGISTRY_AUTH_FAILED' : response.status === 404 ? 'NOT_FOUND' : 'REGISTRY_ERROR';
  return new RegistryResponseError(
    response.status,
    code,
    `${method} ${url} failed: ${response.status} ${response.statusText}${detail ? ` (${detail})` : ''}`,
    `check the reference ${registry}/${repository} and your access to it`,
  );
}
