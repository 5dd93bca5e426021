import { type Hash, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../core/private-dir.js';
import { digestOfHash, sha256Hash } from '../../oci/digest.js';
import { parseDigest } from '../digest.js';
import { digestInvalid, RegistryError, uploadUnknown } from '../errors.js';
import type { BlobInfo, BlobPool } from './blob-pool.js';
import { HashingFileWriter } from './file-writer.js';
import { listDir } from './files.js';
import type { StorageLayout } from './layout.js';

export const DEFAULT_UPLOAD_TTL_MS = 24 * 60 * 60 * 1000;
const UPLOAD_ID_RE = /^[0-9a-f-]{36}$/;

interface UploadState {
  repo: string;
  /** Hash of the first `hashed` bytes of the session's data file (lost on restart: then rehashed at the end). */
  hash: Hash | undefined;
  hashed: number;
  busy: boolean;
}

/** Where a finished upload is linked: the repository index. */
export interface BlobLinker {
  linkBlob(repo: string, digest: string): Promise<void>;
}

/**
 * Blob upload sessions (distribution spec "Pushing blobs": POST, PATCH, PUT, GET status, DELETE). A session is a
 * data file that chunks are appended to, hashed as they arrive (so completing a streamed upload does not read it
 * again), plus the repository it belongs to. Sessions survive a restart (their hash state does not: the data
 * is rehashed at completion); one request writes a session at a time (409 otherwise); a completed session is
 * verified, renamed into the blob pool, linked into its repository, and only then removed.
 */
export class UploadSessions {
  readonly #live = new Map<string, UploadState>();

  constructor(
    private readonly layout: StorageLayout,
    private readonly blobs: BlobPool,
    private readonly links: BlobLinker,
    readonly ttlMs: number,
    private readonly fsync: boolean,
  ) {}

  async create(repo: string): Promise<string> {
    this.layout.repository(repo);
    const id = randomUUID();
    await mkdir(this.layout.upload(id), { mode: PRIVATE_DIR_MODE });
    await fs.promises.writeFile(this.layout.upload(id, 'data'), '', { mode: PRIVATE_FILE_MODE });
    await fs.promises.writeFile(this.layout.upload(id, 'meta.json'), JSON.stringify({ repo, created: Date.now() }), {
      mode: PRIVATE_FILE_MODE,
    });
    this.#live.set(id, { repo, hash: sha256Hash(), hashed: 0, busy: false });
    return id;
  }

  async #session(repo: string, id: string): Promise<UploadState> {
    if (!UPLOAD_ID_RE.test(id)) throw uploadUnknown(id);
    const known = this.#live.get(id);
    if (known) {
      if (known.repo !== repo) throw uploadUnknown(id);
      return known;
    }
    try {
      const meta = JSON.parse(await readFile(this.layout.upload(id, 'meta.json'), 'utf8')) as { repo: string };
      if (meta.repo !== repo) throw uploadUnknown(id);
      const state: UploadState = { repo, hash: undefined, hashed: 0, busy: false };
      this.#live.set(id, state);
      return state;
    } catch (error) {
      if (error instanceof RegistryError) throw error;
      throw uploadUnknown(id);
    }
  }

  /** Bytes received so far in an upload session. */
  async size(repo: string, id: string): Promise<number> {
    await this.#session(repo, id);
    try {
      return (await stat(this.layout.upload(id, 'data'))).size;
    } catch {
      throw uploadUnknown(id);
    }
  }

  /**
   * Append a chunk. With `start` (from Content-Range) the chunk must begin exactly where the data ends, else
   * 416 (spec: out-of-order chunks). Returns the new size.
   */
  async append(
    repo: string,
    id: string,
    source: Readable | AsyncIterable<Uint8Array>,
    start?: number,
    length?: number,
  ): Promise<number> {
    const state = await this.#session(repo, id);
    if (state.busy) throw new RegistryError(409, 'BLOB_UPLOAD_INVALID', 'another request is writing this upload');
    state.busy = true;
    try {
      const size = await this.size(repo, id);
      if (start !== undefined && start !== size) {
        throw new RegistryError(
          416,
          'BLOB_UPLOAD_INVALID',
          `chunk starts at ${start} but the upload has ${size} bytes`,
          { expectedStart: size },
          { Range: `0-${Math.max(0, size - 1)}` },
        );
      }
      const handle = await open(this.layout.upload(id, 'data'), 'a');
      // Keep hashing incrementally only when our hash covers everything written so far.
      const continuous = state.hash !== undefined && state.hashed === size;
      const hash = continuous ? state.hash! : sha256Hash();
      const writer = new HashingFileWriter(handle.fd, hash, length, this.fsync);
      try {
        await pipeline(source, writer);
      } catch (error) {
        // Partial data was appended: its hash state is unknown now; rehash at completion.
        state.hash = undefined;
        throw error;
      } finally {
        await handle.close();
      }
      if (length !== undefined && writer.bytes !== length) {
        state.hash = undefined;
        throw new RegistryError(400, 'SIZE_INVALID', `received ${writer.bytes} bytes, Content-Length said ${length}`);
      }
      if (continuous) state.hashed = size + writer.bytes;
      else state.hash = undefined;
      return size + writer.bytes;
    } finally {
      state.busy = false;
    }
  }

  /** Finish an upload: append the last chunk (if any), verify the digest, and move the data into the pool. */
  async complete(
    repo: string,
    id: string,
    digest: string,
    last?: Readable | AsyncIterable<Uint8Array>,
    length?: number,
  ): Promise<BlobInfo> {
    parseDigest(digest);
    if (last) await this.append(repo, id, last, undefined, length);
    const state = await this.#session(repo, id);
    if (state.busy) throw new RegistryError(409, 'BLOB_UPLOAD_INVALID', 'another request is writing this upload');
    state.busy = true;
    try {
      const data = this.layout.upload(id, 'data');
      const size = (await stat(data)).size;
      let actual: string;
      if (state.hash && state.hashed === size) actual = digestOfHash(state.hash);
      else {
        const hash = sha256Hash();
        await pipeline(fs.createReadStream(data, { highWaterMark: 1 << 20 }), async (chunks: AsyncIterable<Buffer>) => {
          for await (const chunk of chunks) hash.update(chunk);
        });
        actual = digestOfHash(hash);
      }
      state.hash = undefined; // digest() finalised it
      if (actual !== digest) {
        // The spec lets the client retry the PUT; keep the session but drop the broken hash state.
        throw digestInvalid('uploaded content does not match digest', { expected: digest, actual });
      }
      await this.blobs.commit(data, digest);
      await this.links.linkBlob(repo, digest);
      await rm(this.layout.upload(id), { recursive: true, force: true });
      this.#live.delete(id);
      return { digest, size };
    } finally {
      state.busy = false;
    }
  }

  /** Sessions open in the store (every process's, and those a restart left). */
  async count(): Promise<number> {
    return (await listDir(this.layout.uploads())).length;
  }

  async cancel(repo: string, id: string): Promise<void> {
    await this.#session(repo, id);
    await rm(this.layout.upload(id), { recursive: true, force: true });
    this.#live.delete(id);
  }

  /** Remove upload sessions not written to for `ttlMs`. Returns how many were removed. */
  async expire(now = Date.now()): Promise<number> {
    let removed = 0;
    for (const id of await listDir(this.layout.uploads())) {
      const dir = this.layout.upload(id);
      let last = 0;
      try {
        last = (await stat(this.layout.upload(id, 'data'))).mtimeMs;
      } catch {}
      if (now - last >= this.ttlMs && !this.#live.get(id)?.busy) {
        await rm(dir, { recursive: true, force: true });
        this.#live.delete(id);
        removed++;
      }
    }
    return removed;
  }
}
