/**
 * A small client for the OCI distribution API (OCI distribution spec): manifests, blobs (HEAD, cross-repository
 * mount, chunked upload with PATCH, resumable verified download), with the registry auth flows that clients
 * meet in practice: Basic, and Bearer tokens from a `WWW-Authenticate: Bearer realm=…,service=…,scope=…`
 * challenge. Plain HTTP for loopback registries or when `insecure`.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { open, truncate } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { DevpivotError } from '../core/errors.js';
import { digestOf } from '../oci/digest.js';
import { IMAGE_MANIFEST_TYPES, INDEX_TYPES } from '../oci/media-types.js';
import { type Credentials, findCredentials } from './auth.js';
import { baseUrlOf } from './transport/scheme.js';

export interface RegistryClientOptions {
  /** Use plain HTTP (and accept any TLS certificate is NOT implied: only HTTP). Default: loopback only. */
  insecure?: boolean;
  /** Explicit credentials; otherwise looked up in the auth files (auth.ts). */
  credentials?: Credentials | null;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** Bytes per PATCH when uploading (default 8 MiB). */
  chunkSize?: number;
  /** Attempts per blob download before giving up (default 5). */
  retries?: number;
}

export interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/** Parse `Bearer realm="…",service="…",scope="…"` (RFC 7235 auth-param syntax). */
export function parseChallenge(header: string): Challenge {
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const params: Record<string, string> = {};
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g;
  for (const match of (space < 0 ? '' : header.slice(space + 1)).matchAll(re)) {
    params[match[1]!.toLowerCase()] = (match[2] ?? match[3] ?? '').replace(/\\(.)/g, '$1');
  }
  return { scheme, params };
}

interface RequestOptions {
  /** Token scopes this request needs, e.g. `repository:os/rhcos:pull,push`. */
  scopes: string[];
  headers?: Record<string, string>;
  body?: Buffer;
  /** Statuses that are not errors (default: 2xx). */
  ok?: number[];
  redirect?: 'follow' | 'manual';
}

export interface FetchedManifest {
  bytes: Buffer;
  mediaType: string;
  digest: string;
}

/** What we send in Accept when fetching a manifest: every format we understand. */
const MANIFEST_ACCEPT = [...IMAGE_MANIFEST_TYPES, ...INDEX_TYPES].join(', ');

export class RegistryClient {
  readonly registry: string;
  readonly baseUrl: string;
  readonly #options: RegistryClientOptions;
  #credentials: Credentials | null | undefined;
  /** Authorization header per scope set; `basic` when the registry asked for Basic. */
  readonly #tokens = new Map<string, string>();
  #basic = false;

  constructor(registry: string, options: RegistryClientOptions = {}) {
    this.registry = registry;
    this.#options = options;
    this.#credentials = options.credentials;
    this.baseUrl = baseUrlOf(registry, options.insecure);
  }

  async #credentialsFor(repository: string): Promise<Credentials | null> {
    if (this.#credentials === undefined) {
      this.#credentials = await findCredentials(this.registry, repository, this.#options.env ?? process.env);
    }
    return this.#credentials;
  }

  async #authorize(challenge: Challenge, scopes: string[], repository: string): Promise<string> {
    const credentials = await this.#credentialsFor(repository);
    const basic = credentials
      ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`
      : undefined;
    if (challenge.scheme === 'basic') {
      if (!basic) throw this.#authError(repository, 'the registry requires a user name and password');
      this.#basic = true;
      return basic;
    }
    if (challenge.scheme !== 'bearer' || !challenge.params.realm) {
      throw this.#authError(repository, `unsupported authentication challenge '${challenge.scheme}'`);
    }
    const url = new URL(challenge.params.realm);
    if (challenge.params.service) url.searchParams.set('service', challenge.params.service);
    for (const scope of scopes) url.searchParams.append('scope', scope);
    const response = await this.#fetch(url.toString(), { headers: basic ? { authorization: basic } : {} });
    if (!response.ok) {
      await response.body?.cancel();
      throw this.#authError(repository, `the token server ${url.origin} answered ${response.status}`);
    }
    const body = (await response.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw this.#authError(repository, `the token server ${url.origin} sent no token`);
    return `Bearer ${token}`;
  }

  #authError(repository: string, why: string): DevpivotError {
    return new DevpivotError('REGISTRY_AUTH_FAILED', `cannot authenticate to ${this.registry}/${repository}: ${why}`, {
      hint:
        'log in with `skopeo login` / `podman login` (or set REGISTRY_AUTH_FILE to an auth.json); ' +
        'credentials are read from REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, ' +
        '~/.config/containers/auth.json and ~/.docker/config.json',
    });
  }

  async #fetch(url: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, { ...init, signal: this.#options.signal ?? null });
    } catch (error) {
      if (this.#options.signal?.aborted) throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const tls = this.baseUrl.startsWith('https') ? ' (for a plain-HTTP registry pass --insecure)' : '';
      throw new DevpivotError(
        'REGISTRY_UNREACHABLE',
        `cannot reach registry ${this.registry} at ${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
        { hint: `check that the registry runs and the address is right${tls}`, cause: error },
      );
    }
  }

  /** One API request with the auth dance: try, answer a 401 challenge once, retry. */
  async request(method: string, path: string, repository: string, options: RequestOptions): Promise<Response> {
    const url = path.startsWith('http') ? path : `${this.baseUrl}${path}`;
    const key = options.scopes.join(' ');
    const send = (authorization: string | undefined) =>
      this.#fetch(url, {
        method,
        headers: { ...options.headers, ...(authorization ? { authorization } : {}) },
        ...(options.body ? { body: options.body } : {}),
        redirect: options.redirect ?? 'follow',
      });
    let authorization = this.#tokens.get(key) ?? (this.#basic ? this.#tokens.get('basic') : undefined);
    let response = await send(authorization);
    if (response.status === 401) {
      const header = response.headers.get('www-authenticate');
      await response.body?.cancel();
      if (!header) throw this.#authError(repository, 'the registry answered 401 without a challenge');
      authorization = await this.#authorize(parseChallenge(header), options.scopes, repository);
      this.#tokens.set(this.#basic ? 'basic' : key, authorization);
      response = await send(authorization);
      if (response.status === 401) {
        await response.body?.cancel();
        throw this.#authError(repository, 'the registry rejected the credentials');
      }
    }
    const ok = options.ok ?? [];
    if (!response.ok && !ok.includes(response.status)) {
      throw await this.#responseError(method, url, repository, response);
    }
    return response;
  }

  async #responseError(method: string, url: string, repository: string, response: Response): Promise<DevpivotError> {
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
    return new DevpivotError(
      code,
      `${method} ${url} failed: ${response.status} ${response.statusText}${detail ? ` (${detail})` : ''}`,
      { hint: `check the reference ${this.registry}/${repository} and your access to it` },
    );
  }

  static pullScope(repository: string): string {
    return `repository:${repository}:pull`;
  }

  static pushScope(repository: string): string {
    return `repository:${repository}:pull,push`;
  }

  async getManifest(repository: string, reference: string): Promise<FetchedManifest> {
    const response = await this.request('GET', `/v2/${repository}/manifests/${reference}`, repository, {
      scopes: [RegistryClient.pullScope(repository)],
      headers: { accept: MANIFEST_ACCEPT },
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    const digest = digestOf(bytes);
    if (reference.startsWith('sha256:') && digest !== reference) {
      throw new DevpivotError(
        'DIGEST_MISMATCH',
        `manifest ${repository}@${reference} from ${this.registry} hashes to ${digest}`,
        {
          hint: 'the registry served corrupted or different content; do not trust it',
        },
      );
    }
    const mediaType =
      response.headers.get('content-type')?.split(';')[0]?.trim() ||
      ((JSON.parse(bytes.toString('utf8')) as { mediaType?: string }).mediaType ?? '');
    return { bytes, mediaType, digest };
  }

  /** A small blob (an image config) in memory, verified. */
  async getBlob(repository: string, digest: string): Promise<Buffer> {
    const response = await this.request('GET', `/v2/${repository}/blobs/${digest}`, repository, {
      scopes: [RegistryClient.pullScope(repository)],
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    if (digestOf(bytes) !== digest) {
      throw new DevpivotError('DIGEST_MISMATCH', `blob ${digest} from ${this.registry}/${repository} is corrupt`, {
        hint: 'the registry served different content than its manifest names',
      });
    }
    return bytes;
  }

  /** The blob's size, or null when the repository does not have it. */
  async hasBlob(repository: string, digest: string): Promise<number | null> {
    const response = await this.request('HEAD', `/v2/${repository}/blobs/${digest}`, repository, {
      scopes: [RegistryClient.pushScope(repository)],
      ok: [404],
    });
    await response.body?.cancel();
    return response.status === 404 ? null : Number(response.headers.get('content-length') ?? 0);
  }

  /** Cross-repository mount; returns false when the registry opened an upload instead (then cancelled). */
  async mountBlob(repository: string, digest: string, from: string): Promise<boolean> {
    const path = `/v2/${repository}/blobs/uploads/?mount=${encodeURIComponent(digest)}&from=${encodeURIComponent(from)}`;
    const response = await this.request('POST', path, repository, {
      scopes: [RegistryClient.pushScope(repository), RegistryClient.pullScope(from)],
      headers: { 'content-length': '0' },
    });
    await response.body?.cancel();
    if (response.status === 201) return true;
    const location = response.headers.get('location');
    if (location) {
      await this.request('DELETE', new URL(location, this.baseUrl).toString(), repository, {
        scopes: [RegistryClient.pushScope(repository)],
        ok: [404, 405],
      }).then(
        (r) => r.body?.cancel(),
        () => {},
      );
    }
    return false;
  }

  /**
   * Upload a blob in chunks: POST to open a session, one PATCH per chunk (Content-Range), PUT with the digest
   * to close it (distribution spec "Pushing a blob in chunks"). `source` yields the blob's bytes.
   */
  async uploadBlob(
    repository: string,
    digest: string,
    source: AsyncIterable<Uint8Array>,
    onProgress?: (sent: number) => void,
  ): Promise<void> {
    const scopes = [RegistryClient.pushScope(repository)];
    const opened = await this.request('POST', `/v2/${repository}/blobs/uploads/`, repository, {
      scopes,
      headers: { 'content-length': '0' },
    });
    await opened.body?.cancel();
    let location = this.#location(opened, repository);
    let sent = 0;
    const chunkSize = this.#options.chunkSize ?? 8 * 1024 * 1024;
    for await (const chunk of rechunk(source, chunkSize)) {
      const response = await this.request('PATCH', location, repository, {
        scopes,
        headers: {
          'content-type': 'application/octet-stream',
          'content-range': `${sent}-${sent + chunk.byteLength - 1}`,
          'content-length': String(chunk.byteLength),
        },
        body: chunk,
      });
      await response.body?.cancel();
      location = this.#location(response, repository);
      sent += chunk.byteLength;
      onProgress?.(sent);
    }
    const url = new URL(location);
    url.searchParams.set('digest', digest);
    const closed = await this.request('PUT', url.toString(), repository, {
      scopes,
      headers: { 'content-length': '0' },
    });
    await closed.body?.cancel();
  }

  #location(response: Response, repository: string): string {
    const location = response.headers.get('location');
    if (!location)
      throw new DevpivotError('REGISTRY_ERROR', `${this.registry}/${repository}: upload response without Location`);
    return new URL(location, this.baseUrl).toString();
  }

  /** PUT a manifest under a tag or digest; returns its digest (checked against the registry's answer). */
  async putManifest(repository: string, reference: string, bytes: Buffer, mediaType: string): Promise<string> {
    const response = await this.request('PUT', `/v2/${repository}/manifests/${reference}`, repository, {
      scopes: [RegistryClient.pushScope(repository)],
      headers: { 'content-type': mediaType },
      body: bytes,
    });
    await response.body?.cancel();
    const digest = digestOf(bytes);
    const answered = response.headers.get('docker-content-digest');
    if (answered && answered !== digest) {
      throw new DevpivotError('DIGEST_MISMATCH', `${this.registry} stored manifest as ${answered}, expected ${digest}`);
    }
    return digest;
  }

  /**
   * Download a blob to `path`, verifying its digest while streaming. A broken connection resumes with
   * `Range: bytes=N-` from what is already on disk; a server that ignores Range (200) restarts from zero.
   */
  async downloadBlob(
    repository: string,
    digest: string,
    size: number,
    path: string,
    onProgress?: (received: number) => void,
  ): Promise<void> {
    const attempts = this.#options.retries ?? 5;
    let hash = createHash('sha256');
    let received = 0;
    await (await open(path, 'w')).close();
    let lastError: unknown;
    for (let attempt = 0; attempt < attempts && received < size; attempt++) {
      if (attempt > 0) await sleep(Math.min(100 * 2 ** attempt, 2000), undefined, { signal: this.#options.signal });
      let response: Response;
      try {
        response = await this.request('GET', `/v2/${repository}/blobs/${digest}`, repository, {
          scopes: [RegistryClient.pullScope(repository)],
          headers: received > 0 ? { range: `bytes=${received}-` } : {},
        });
      } catch (error) {
        // A registry that is briefly away (restart, network blip) gets the remaining attempts.
        if ((error as DevpivotError).code !== 'REGISTRY_UNREACHABLE') throw error;
        lastError = error;
        continue;
      }
      if (received > 0 && response.status !== 206) {
        hash = createHash('sha256');
        received = 0;
        await truncate(path, 0);
      }
      const out = createWriteStream(path, { flags: 'a' });
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          hash.update(chunk);
          received += chunk.byteLength;
          if (!out.write(chunk)) await once(out, 'drain');
          onProgress?.(received);
        }
      } catch (error) {
        if (this.#options.signal?.aborted) throw error;
        lastError = error; // connection broken mid-blob: resume from `received`
      } finally {
        out.end();
        await once(out, 'close');
      }
    }
    if (received < size) {
      throw new DevpivotError(
        'BLOB_DOWNLOAD_FAILED',
        `blob ${digest} from ${this.registry}/${repository}: got ${received} of ${size} bytes after ${attempts} attempts`,
        { hint: 'check the network and the registry, then retry', cause: lastError },
      );
    }
    const actual = `sha256:${hash.digest('hex')}`;
    if (received !== size || actual !== digest) {
      throw new DevpivotError(
        'DIGEST_MISMATCH',
        `blob ${digest} from ${this.registry}/${repository} is corrupt: ${received} bytes hashing to ${actual}`,
        { hint: 'the registry served different content than its manifest names' },
      );
    }
  }
}

/** Re-cut a byte stream into pieces of exactly `size` bytes (the last may be shorter, never empty). */
export async function* rechunk(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let length = 0;
  for await (const piece of source) {
    parts.push(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength));
    length += piece.byteLength;
    while (length >= size) {
      const all = Buffer.concat(parts, length);
      yield all.subarray(0, size);
      parts = [all.subarray(size)];
      length -= size;
    }
  }
  if (length > 0) yield Buffer.concat(parts, length);
}
