/**
 * A small client for the OCI distribution API: manifests, blobs (HEAD, cross-repository mount, chunked upload
 * with PATCH, resumable verified download), over a transport that handles the registry auth flows clients meet
 * in practice (Basic, and Bearer tokens from a `WWW-Authenticate` challenge) and plain HTTP for loopback
 * registries or when `insecure`. The operations live in operations/, the HTTP side in transport/.
 */
import { getBlob, hasBlob, mountBlob } from './operations/blobs.js';
import { downloadBlob } from './operations/download.js';
import { type FetchedManifest, getManifest, putManifest } from './operations/manifests.js';
import { uploadBlob } from './operations/upload.js';
import {
  pullScope,
  pushScope,
  RegistryTransport,
  type RequestOptions,
  type TransportOptions,
} from './transport/transport.js';

export type { FetchedManifest };

export interface RegistryClientOptions extends TransportOptions {
  /** Bytes per PATCH when uploading (default 8 MiB). */
  chunkSize?: number;
  /** Attempts per blob download before giving up (default 5). */
  retries?: number;
}

export class RegistryClient {
  readonly transport: RegistryTransport;

  constructor(
    readonly registry: string,
    private readonly options: RegistryClientOptions = {},
  ) {
    this.transport = new RegistryTransport(registry, options);
  }

  get baseUrl(): string {
    return this.transport.baseUrl;
  }

  static pullScope = pullScope;
  static pushScope = pushScope;

  /** One API request with the auth dance (see RegistryTransport.request). */
  request(method: string, path: string, repository: string, options: RequestOptions): Promise<Response> {
    return this.transport.request(method, path, repository, options);
  }

  getManifest(repository: string, reference: string): Promise<FetchedManifest> {
    return getManifest(this.transport, repository, reference);
  }

  /** PUT a manifest under a tag or digest; returns its digest (checked against the registry's answer). */
  putManifest(repository: string, reference: string, bytes: Buffer, mediaType: string): Promise<string> {
    return putManifest(this.transport, repository, reference, bytes, mediaType);
  }

  /** A small blob (an image config) in memory, verified. */
  getBlob(repository: string, digest: string): Promise<Buffer> {
    return getBlob(this.transport, repository, digest);
  }

  /** The blob's size, or null when the repository does not have it. */
  hasBlob(repository: string, digest: string): Promise<number | null> {
    return hasBlob(this.transport, repository, digest);
  }

  /** Cross-repository mount; returns false when the registry opened an upload instead (then cancelled). */
  mountBlob(repository: string, digest: string, from: string): Promise<boolean> {
    return mountBlob(this.transport, repository, digest, from);
  }

  /** Chunked upload (POST, PATCH per chunk, PUT with the digest). */
  uploadBlob(
    repository: string,
    digest: string,
    source: AsyncIterable<Uint8Array>,
    onProgress?: (sent: number) => void,
  ): Promise<void> {
    return uploadBlob(this.transport, repository, digest, source, { chunkSize: this.options.chunkSize, onProgress });
  }

  /** Download to `path`, verified while streaming, resumed with Range after a broken connection. */
  downloadBlob(
    repository: string,
    digest: string,
    size: number,
    path: string,
    onProgress?: (received: number) => void,
  ): Promise<void> {
    return downloadBlob(this.transport, repository, { digest, size }, path, {
      attempts: this.options.retries,
      onProgress,
    });
  }
}
