/**
 * The pull-through cache (docs/ARCHITECTURE.md "Pull-through"): a blob or a manifest by digest that a covered
 * repository lacks is fetched from the upstream under the same repository name, once: concurrent requests for one
 * digest share one flight. Blobs are streamed to the clients while they are stored; manifests (small) are read whole,
 * verified and stored, then served like any other. Tags never pull through (mirror mode is digest-only).
 */
import { type FileHandle, open } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import type { EventBus } from '../../core/bus.js';
import { PRIVATE_FILE_MODE } from '../../core/private-dir.js';
import { digestOf } from '../../oci/digest.js';
import { ANY_MANIFEST_TYPES, bareMediaType } from '../../oci/media-types.js';
import { blobUnknown, manifestUnknown, RegistryError } from '../errors.js';
import { MAX_MANIFEST_BYTES } from '../manifest.js';
import type { StoredManifest } from '../storage/repository-index.js';
import type { RegistryStore } from '../store.js';
import { BlobFlight } from './blob-flight.js';
import { streamFlight } from './flight-reader.js';
import { type Upstream, upstreamFailed } from './upstream.js';

export interface PullThroughOptions {
  upstream: Upstream;
  /** Repositories that pull through: named by the caller, never all by default (a miss elsewhere is a 404). */
  covers: (repository: string) => boolean;
}

/** Counters a caller (and the tests) can read: what went upstream. */
export interface PullThroughStats {
  blobFetches: number;
  manifestFetches: number;
}

export class PullThrough {
  readonly stats: PullThroughStats = { blobFetches: 0, manifestFetches: 0 };
  readonly #flights = new Map<string, Promise<BlobFlight>>();
  readonly #manifests = new Map<string, Promise<StoredManifest>>();

  constructor(
    private readonly store: RegistryStore,
    private readonly options: PullThroughOptions,
    /** Receives one `registry.upstream` per upstream fetch, when it ends. */
    private readonly bus?: EventBus,
  ) {}

  #fetched(what: 'blob' | 'manifest', repository: string, digest: string, bytes: number, error?: unknown): void {
    this.bus?.emit({
      kind: 'registry.upstream',
      what,
      repository,
      digest,
      outcome: error === undefined ? 'stored' : 'failed',
      bytes,
      ...(error === undefined ? {} : { error: error instanceof Error ? error.message : String(error) }),
    });
  }

  covers(repository: string): boolean {
    return this.options.covers(repository);
  }

  /** HEAD of a blob the store lacks: the upstream's answer, nothing stored. */
  async headBlob(repository: string, digest: string): Promise<number> {
    const { upstream } = this.options;
    let response: Response;
    try {
      response = await upstream.request('HEAD', repository, `/v2/${repository}/blobs/${digest}`);
    } catch (error) {
      throw upstreamFailed(upstream, `blob ${digest} of ${repository}`, error);
    }
    await response.body?.cancel();
    if (response.status === 404) throw blobUnknown(digest);
    return Number(response.headers.get('content-length') ?? 0);
  }

  /**
   * Send a blob the store lacks: join the flight for `digest` (starting it), set the headers, stream. A blob the
   * pool has from another repository is only linked (the caller then serves it from the store): returns false.
   */
  async sendBlob(
    repository: string,
    digest: string,
    res: ServerResponse,
    /** After every write: the bytes sent so far and the blob's size when the upstream said it. */
    onSent: (sent: number, total: number | undefined) => void,
  ): Promise<boolean> {
    // The map first, the pool second, the map again: a flight leaves the map only after its blob is in the pool,
    // so a blob is either found in one of them or was never fetched (no second upstream GET for a late client).
    let pending = this.#flights.get(digest);
    if (!pending && (await this.store.blobs.has(digest))) {
      await this.store.repositories.linkBlob(repository, digest);
      return false;
    }
    pending ??= this.#flights.get(digest);
    if (!pending) {
      pending = this.#startFlight(repository, digest);
      this.#flights.set(digest, pending);
      const forget = () => this.#flights.delete(digest);
      pending.then(
        (flight) =>
          flight.finished.then(() => {
            forget();
            this.#fetched('blob', repository, digest, flight.written, flight.error);
          }),
        (error) => {
          forget();
          this.#fetched('blob', repository, digest, 0, error);
        },
      );
    }
    const flight = await pending;
    if (flight.state === 'failed') throw flight.error!;
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('Docker-Content-Digest', digest);
    res.setHeader('ETag', `"${digest}"`);
    if (flight.size !== undefined) res.setHeader('Content-Length', flight.size);
    await streamFlight(flight, res, (sent) => onSent(sent, flight.size));
    return true;
  }

  async #startFlight(repository: string, digest: string): Promise<BlobFlight> {
    const { upstream } = this.options;
    let response: Response;
    try {
      this.stats.blobFetches++;
      response = await upstream.request('GET', repository, `/v2/${repository}/blobs/${digest}`);
    } catch (error) {
      throw upstreamFailed(upstream, `blob ${digest} of ${repository}`, error);
    }
    if (response.status === 404 || !response.body) {
      await response.body?.cancel();
      throw blobUnknown(digest);
    }
    const length = response.headers.get('content-length');
    const { layout } = this.store;
    const temp = layout.temp();
    let handle: FileHandle;
    try {
      handle = await open(temp, 'wx', PRIVATE_FILE_MODE);
    } catch (error) {
      await response.body.cancel();
      throw error;
    }
    return new BlobFlight(
      digest,
      length === null ? undefined : Number(length),
      temp,
      layout.blob(digest),
      this.store,
      repository,
      response.body,
      handle,
    );
  }

  /** A manifest by digest the store lacks: fetched once, verified, stored under `repository`. */
  manifest(repository: string, digest: string): Promise<StoredManifest> {
    const key = `${repository}@${digest}`;
    let pending = this.#manifests.get(key);
    if (!pending) {
      pending = this.#fetchManifest(repository, digest);
      this.#manifests.set(key, pending);
      const forget = () => this.#manifests.delete(key);
      pending.then(
        (manifest) => {
          forget();
          this.#fetched('manifest', repository, digest, manifest.bytes.length);
        },
        (error) => {
          forget();
          this.#fetched('manifest', repository, digest, 0, error);
        },
      );
    }
    return pending;
  }

  async #fetchManifest(repository: string, digest: string): Promise<StoredManifest> {
    const { upstream } = this.options;
    let response: Response;
    let bytes: Buffer;
    try {
      this.stats.manifestFetches++;
      response = await upstream.request(
        'GET',
        repository,
        `/v2/${repository}/manifests/${digest}`,
        ANY_MANIFEST_TYPES.join(', '),
      );
      if (response.status === 404) {
        await response.body?.cancel();
        throw manifestUnknown(digest);
      }
      if (Number(response.headers.get('content-length') ?? 0) > MAX_MANIFEST_BYTES)
        throw new RegistryError(502, 'SIZE_INVALID', `upstream manifest is larger than ${MAX_MANIFEST_BYTES} bytes`);
      bytes = Buffer.from(await response.arrayBuffer());
    } catch (error) {
      throw upstreamFailed(upstream, `manifest ${digest} of ${repository}`, error);
    }
    const actual = digestOf(bytes);
    if (actual !== digest)
      throw new RegistryError(502, 'DIGEST_INVALID', 'upstream manifest does not match its digest', {
        expected: digest,
        actual,
      });
    const mediaType = bareMediaType(response.headers.get('content-type') ?? undefined);
    return this.store.repositories.putPulledManifest(repository, digest, bytes, mediaType || undefined);
  }
}
