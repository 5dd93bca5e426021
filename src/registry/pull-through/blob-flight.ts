/**
 * One upstream download of one blob, shared by every client that asks for it meanwhile (docs/ARCHITECTURE.md
 * "Pull-through"). The body goes to a temp file of the store while it is hashed; readers follow the file as it
 * grows (flight-reader.ts). At the end the digest (and the promised length) is checked: a match is renamed into the
 * blob pool and linked into the repository, a mismatch is deleted and every reader is failed.
 */
import { EventEmitter } from 'node:events';
import { type FileHandle, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { digestOfHash, sha256Hash } from '../../oci/digest.js';
import { RegistryError } from '../errors.js';
import type { RegistryStore } from '../store.js';

export type FlightState = 'running' | 'done' | 'failed';

export class BlobFlight extends EventEmitter {
  written = 0;
  state: FlightState = 'running';
  error: RegistryError | undefined;
  /** Settles when the flight ends (never rejects: read `state`/`error`). */
  readonly finished: Promise<void>;

  constructor(
    readonly digest: string,
    /** The upstream's Content-Length, when it sent one. */
    readonly size: number | undefined,
    /** Where the bytes are written until they are verified. */
    readonly temp: string,
    /** Where they are once verified. */
    readonly final: string,
    store: RegistryStore,
    repository: string,
    body: ReadableStream<Uint8Array>,
    /** `temp`, already created (readers may open it as soon as the flight exists). */
    handle: FileHandle,
  ) {
    super();
    this.setMaxListeners(0);
    this.finished = this.#pump(store, repository, body, handle);
  }

  /** Resolves on the next write, or the end. */
  changed(): Promise<void> {
    if (this.state !== 'running') return Promise.resolve();
    return new Promise((resolve) => this.once('change', resolve));
  }

  async #pump(
    store: RegistryStore,
    repository: string,
    body: ReadableStream<Uint8Array>,
    file: FileHandle,
  ): Promise<void> {
    const hash = sha256Hash();
    let handle: FileHandle | undefined = file;
    try {
      for await (const chunk of Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>)) {
        const buffer = chunk as Buffer;
        hash.update(buffer);
        let offset = 0;
        while (offset < buffer.length) {
          const { bytesWritten } = await handle.write(buffer, offset, buffer.length - offset, this.written + offset);
          offset += bytesWritten;
        }
        this.written += buffer.length;
        this.emit('change');
      }
      await handle.sync();
      await handle.close();
      handle = undefined;
      const actual = digestOfHash(hash);
      if (this.size !== undefined && this.written !== this.size)
        throw new RegistryError(502, 'SIZE_INVALID', `upstream sent ${this.written} bytes, promised ${this.size}`);
      if (actual !== this.digest)
        // 502, not digestInvalid's 400: the client sent nothing wrong, the upstream did.
        throw new RegistryError(502, 'DIGEST_INVALID', 'upstream content does not match its digest', {
          expected: this.digest,
          actual,
        });
      await store.blobs.commit(this.temp, this.digest);
      await store.repositories.linkBlob(repository, this.digest);
      this.state = 'done';
    } catch (error) {
      await handle?.close().catch(() => {});
      await rm(this.temp, { force: true });
      this.error =
        error instanceof RegistryError
          ? error
          : new RegistryError(
              502,
              'UNAVAILABLE',
              `upstream download of ${this.digest} failed: ${(error as Error).message}`,
            );
      this.state = 'failed';
    }
    this.emit('change');
  }
}
