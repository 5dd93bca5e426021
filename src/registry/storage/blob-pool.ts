import type * as fs from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../core/private-dir.js';
import { digestOfHash, isSha256Digest, sha256Hash } from '../../oci/digest.js';
import { parseDigest } from '../digest.js';
import { digestInvalid, RegistryError } from '../errors.js';
import { HashingFileWriter } from './file-writer.js';
import { isMissing, syncDir } from './files.js';
import type { StorageLayout } from './layout.js';

export interface BlobInfo {
  digest: string;
  size: number;
}

/**
 * The content-addressed blob pool, shared by every repository. A blob is visible under its digest only once it
 * is complete: every write goes to a temp file on the same filesystem while hashing, is fsynced (unless
 * `fsync` is false), then renamed into place. A crash leaves a stray temp file (removed at the next open), never
 * a truncated blob; concurrent writes of the same content end in one file (rename is atomic, same bytes win).
 */
export class BlobPool {
  constructor(
    private readonly layout: StorageLayout,
    private readonly fsync: boolean,
  ) {}

  async stat(digest: string): Promise<BlobInfo | undefined> {
    if (!isSha256Digest(digest)) return undefined;
    try {
      const info = await stat(this.layout.blob(digest));
      return { digest, size: info.size };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async has(digest: string): Promise<boolean> {
    return (await this.stat(digest)) !== undefined;
  }

  /**
   * Store a blob from a stream (never held in memory). With `expectedDigest` the content is verified while
   * streaming and rejected (DIGEST_INVALID) before it becomes visible; with `expectedSize`, SIZE_INVALID.
   */
  async put(
    source: Readable | AsyncIterable<Uint8Array> | Uint8Array,
    expectedDigest?: string,
    expectedSize?: number,
  ): Promise<BlobInfo> {
    return this.layout.gate.write(() => this.#put(source, expectedDigest, expectedSize));
  }

  async #put(
    source: Readable | AsyncIterable<Uint8Array> | Uint8Array,
    expectedDigest?: string,
    expectedSize?: number,
  ): Promise<BlobInfo> {
    if (expectedDigest !== undefined) parseDigest(expectedDigest);
    const temp = this.layout.temp();
    const handle = await open(temp, 'wx', PRIVATE_FILE_MODE);
    let committed = false;
    try {
      const writer = new HashingFileWriter(handle.fd, sha256Hash(), undefined, this.fsync);
      const readable = source instanceof Uint8Array ? Readable.from([source]) : source;
      await pipeline(readable, writer);
      await handle.close();
      const digest = digestOfHash(writer.hash);
      if (expectedSize !== undefined && writer.bytes !== expectedSize)
        throw new RegistryError(400, 'SIZE_INVALID', `received ${writer.bytes} bytes, expected ${expectedSize}`);
      if (expectedDigest !== undefined && digest !== expectedDigest)
        throw digestInvalid('content does not match digest', { expected: expectedDigest, actual: digest });
      await this.#commit(temp, digest);
      committed = true;
      return { digest, size: writer.bytes };
    } finally {
      if (!committed) {
        await handle.close().catch(() => {});
        await rm(temp, { force: true });
      }
    }
  }

  /**
   * Rename a fully written, verified (and fsynced) file into the pool under `digest`. Upload sessions publish
   * their data file this way. Same content wins either way: rename is atomic.
   */
  commit(file: string, digest: string): Promise<void> {
    return this.layout.gate.write(() => this.#commit(file, digest));
  }

  async #commit(file: string, digest: string): Promise<void> {
    const target = this.layout.blob(digest);
    await mkdir(dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
    await rename(file, target);
    if (this.fsync) await syncDir(dirname(target));
  }

  /** Open a blob for reading: the caller streams from `handle` and closes it. Undefined when absent. */
  async open(digest: string): Promise<{ handle: fs.promises.FileHandle; size: number } | undefined> {
    if (!isSha256Digest(digest)) return undefined;
    try {
      const handle = await open(this.layout.blob(digest), 'r');
      const info = await handle.stat();
      return { handle, size: info.size };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /** A whole small blob (manifests, configs), undefined when absent. */
  async read(digest: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.layout.blob(digest));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }
}
