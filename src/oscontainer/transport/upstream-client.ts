/**
 * A registry as a pull-through upstream: one GET/HEAD of an API path over RegistryTransport, so the upstream is
 * spoken to as `devpivot pull` speaks to it (scheme by loopback, the auth-file credentials, the token dance,
 * retries of transient failures). Its shape is the registry layer's `Upstream` (src/registry/pull-through).
 */
import { pullScope, RegistryTransport, type TransportOptions } from './transport.js';

export interface UpstreamClient {
  readonly name: string;
  request(method: 'GET' | 'HEAD', repository: string, path: string, accept?: string): Promise<Response>;
}

/** `baseUrl`: `http(s)://host[:port]`; http:// is spoken as plain HTTP whatever the host. */
export function upstreamClient(baseUrl: string, options: Omit<TransportOptions, 'insecure'> = {}): UpstreamClient {
  const url = new URL(baseUrl);
  const transport = new RegistryTransport(url.host, {
    ...options,
    insecure: url.protocol === 'http:',
    partialDir: false,
  });
  return {
    name: url.origin,
    request: (method, repository, path, accept) =>
      transport.request(method, path, repository, {
        scopes: [pullScope(repository)],
        ...(accept ? { headers: { accept } } : {}),
        ok: [404],
      }),
  };
}
