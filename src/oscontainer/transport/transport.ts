/**
 * The HTTP side of talking to a registry, apart from what is said (operations/): the base URL and scheme, one
 * request with the auth dance (try, answer a 401 challenge once, retry; tokens cached per scope set), and
 * failures mapped to DevpivotErrors (errors.ts). After go-containerregistry's pkg/v1/remote/transport.
 */

import { join } from 'node:path';
import { cacheDir } from '../../core/paths.js';
import { Authenticator } from './authenticator.js';
import { caFetch } from './ca-fetch.js';
import type { Credentials } from './credentials.js';
import { authFailed, responseError, unreachable } from './errors.js';
import { backoff, isTransient, REQUEST_ATTEMPTS } from './retry.js';
import { baseUrlOf } from './scheme.js';
import { trustedRegistry } from './trusted.js';

export interface TransportOptions {
  /** Use plain HTTP (and accept any TLS certificate is NOT implied: only HTTP). Default: loopback only. */
  insecure?: boolean;
  /**
   * Where blob downloads keep what they got so far, so that a later run resumes them (default: `blobs/partial` in
   * the cache directory; false: no partial downloads kept).
   */
  partialDir?: string | false;
  /** Explicit credentials; otherwise looked up in the auth files (credentials.ts). */
  credentials?: Credentials | null;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

export interface RequestOptions {
  /** Token scopes this request needs, e.g. `repository:os/rhcos:pull,push`. */
  scopes: string[];
  headers?: Record<string, string>;
  body?: Buffer;
  /** Statuses that are not errors (default: 2xx). */
  ok?: number[];
  redirect?: 'follow' | 'manual';
  /** Attempts on a transient failure (retry.ts): default REQUEST_ATTEMPTS for GET and HEAD, 1 otherwise. */
  attempts?: number;
}

export const pullScope = (repository: string) => `repository:${repository}:pull`;
export const pushScope = (repository: string) => `repository:${repository}:pull,push`;

export class RegistryTransport {
  readonly baseUrl: string;
  readonly signal: AbortSignal | undefined;
  readonly partialDir: string | undefined;
  readonly #auth: Authenticator;
  /** Authorization header per scope set; `basic` when the registry asked for Basic. */
  readonly #tokens = new Map<string, string>();
  /** fetch, or fetch with the CA of a registry trusted.ts names. */
  readonly #send: (url: string, init: RequestInit) => Promise<Response>;

  constructor(
    readonly registry: string,
    options: TransportOptions = {},
  ) {
    const trust = trustedRegistry(registry);
    this.baseUrl = trust?.caPem ? `https://${registry}` : baseUrlOf(registry, options.insecure);
    this.#send = trust?.caPem ? caFetch(trust.caPem) : fetch;
    this.signal = options.signal;
    const env = options.env ?? process.env;
    this.partialDir =
      options.partialDir === false ? undefined : (options.partialDir ?? join(cacheDir(env), 'blobs', 'partial'));
    this.#auth = new Authenticator(
      registry,
      options.credentials ?? trust?.credentials,
      options.env ?? process.env,
      (url, init) => this.#fetch(url, init),
    );
  }

  async #fetch(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.#send(url, { ...init, signal: this.signal ?? null });
    } catch (error) {
      if (this.signal?.aborted) throw error;
      throw unreachable(this.registry, url, this.baseUrl, error);
    }
  }

  /** A Location header (or any path) as an absolute URL on this registry. */
  resolve(location: string): string {
    return new URL(location, this.baseUrl).toString();
  }

  /**
   * One API request with the auth dance; a status outside 2xx and `ok` is an error. A transient failure (the
   * registry away, a 5xx, a 429) of an idempotent request is tried again with backoff.
   */
  async request(method: string, path: string, repository: string, options: RequestOptions): Promise<Response> {
    const attempts = options.attempts ?? (method === 'GET' || method === 'HEAD' ? REQUEST_ATTEMPTS : 1);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#request(method, path, repository, options);
      } catch (error) {
        if (attempt >= attempts || !isTransient(error) || this.signal?.aborted) throw error;
        await backoff(attempt, this.signal);
      }
    }
  }

  async #request(method: string, path: string, repository: string, options: RequestOptions): Promise<Response> {
    const url = path.startsWith('http') ? path : `${this.baseUrl}${path}`;
    const key = options.scopes.join(' ');
    const send = (authorization: string | undefined) =>
      this.#fetch(url, {
        method,
        headers: { ...options.headers, ...(authorization ? { authorization } : {}) },
        ...(options.body ? { body: options.body } : {}),
        redirect: options.redirect ?? 'follow',
      });
    let authorization = this.#tokens.get(key) ?? (this.#auth.basic ? this.#tokens.get('basic') : undefined);
    let response = await send(authorization);
    if (response.status === 401) {
      const header = response.headers.get('www-authenticate');
      await response.body?.cancel();
      if (!header) throw authFailed(this.registry, repository, 'the registry answered 401 without a challenge');
      authorization = await this.#auth.answer(header, options.scopes, repository);
      this.#tokens.set(this.#auth.basic ? 'basic' : key, authorization);
      response = await send(authorization);
      if (response.status === 401) {
        await response.body?.cancel();
        throw authFailed(this.registry, repository, 'the registry rejected the credentials');
      }
    }
    const ok = options.ok ?? [];
    if (!response.ok && !ok.includes(response.status)) {
      throw await responseError(method, url, this.registry, repository, response);
    }
    return response;
  }
}
