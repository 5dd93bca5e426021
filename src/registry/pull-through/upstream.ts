/**
 * The registry a pull-through cache fills from. The registry layer only needs one authenticated GET/HEAD of an API
 * path; the engine supplies it over oscontainer's RegistryTransport (credentials as `devpivot pull` reads them).
 */
import { RegistryError } from '../errors.js';

export interface Upstream {
  /** For messages: the upstream's base URL. */
  readonly name: string;
  /**
   * One request for `path` (`/v2/<repository>/blobs/<digest>`, `/v2/<repository>/manifests/<digest>`). A 404 is a
   * response; anything else outside 2xx, and an unreachable upstream, throws.
   */
  request(method: 'GET' | 'HEAD', repository: string, path: string, accept?: string): Promise<Response>;
}

/** What a client of the embedded registry gets when the upstream cannot answer: 503 UNAVAILABLE, saying why. */
export function upstreamFailed(upstream: Upstream, what: string, error: unknown): RegistryError {
  if (error instanceof RegistryError) return error;
  const why = error instanceof Error ? error.message : String(error);
  return new RegistryError(503, 'UNAVAILABLE', `pull-through upstream ${upstream.name} failed for ${what}: ${why}`, {
    upstream: upstream.name,
  });
}
