import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { PRIVATE_DIR_MODE, privateDir } from '../core/private-dir.js';
import { type BlobInfo, BlobPool } from './storage/blob-pool.js';
import { StorageLayout } from './storage/layout.js';
import { removeDeadTemps } from './storage/process-temp.js';
import { RepositoryIndex, type StoredManifest } from './storage/repository-index.js';
import { DEFAULT_UPLOAD_TTL_MS, UploadSessions } from './storage/upload-sessions.js';

export type { BlobInfo, StoredManifest };
export { DEFAULT_UPLOAD_TTL_MS };

export interface StoreOptions {
  /** Upload sessions untouched for this long are removed (default 24 h). */
  uploadTtlMs?: number;
  /**
   * fsync blob data and the pool directory it is renamed into before the blob becomes visible (default true;
   * `serve --no-fsync` sets false). Metadata (links, revisions, tags, referrers) is always fsynced with its
   * directory. Without fsync a process crash still never exposes a partial blob (the rename publishes only
   * complete files), but after a power cut a blob accepted in the last seconds (the kernel's writeback delay,
   * ~30 s by default) can be missing, or present under its digest with zero length or partly zeroed content,
   * while the manifest naming it is there: pulls of that manifest then fail (BLOB_UNKNOWN, or a digest mismatch
   * on the client), until the blob is pushed again. This is distribution's filesystem driver's behaviour (it never
   * fsyncs).
   */
  fsync?: boolean;
}

/**
 * The registry's on-disk store (layout in storage/layout.ts): the blob pool, the repository index and the
 * upload sessions over one storage directory. The HTTP handlers and gc use the three parts; the methods below
 * are the one-object API for callers outside HTTP (the in-process push of oscontainer's `pushToStore`, the CLI).
 */
export class RegistryStore {
  readonly layout: StorageLayout;
  readonly blobs: BlobPool;
  readonly repositories: RepositoryIndex;
  readonly uploads: UploadSessions;

  private constructor(
    readonly root: string,
    options: StoreOptions,
  ) {
    const fsync = options.fsync ?? true;
    this.layout = new StorageLayout(root);
    this.blobs = new BlobPool(this.layout, fsync);
    this.repositories = new RepositoryIndex(this.layout, this.blobs);
    this.uploads = new UploadSessions(
      this.layout,
      this.blobs,
      this.repositories,
      options.uploadTtlMs ?? DEFAULT_UPLOAD_TTL_MS,
      fsync,
    );
  }

  /**
   * Open (creating) a store at `root`: removes the temp space of processes that are gone (in-flight writes of a
   * crashed run; never another live process's) and expires uploads.
   */
  static async open(root: string, options: StoreOptions = {}): Promise<RegistryStore> {
    const store = new RegistryStore(root, options);
    // The store is private: 0700 folders, 0600 files (what a push wrote is no other local user's to read).
    await privateDir(root);
    await removeDeadTemps(join(root, 'tmp'));
    for (const dir of StorageLayout.FOLDERS) await mkdir(join(root, dir), { recursive: true, mode: PRIVATE_DIR_MODE });
    await mkdir(store.layout.processTemp(), { recursive: true, mode: PRIVATE_DIR_MODE });
    await store.uploads.expire();
    return store;
  }

  get uploadTtlMs(): number {
    return this.uploads.ttlMs;
  }

  hasBlob(digest: string): Promise<boolean> {
    return this.blobs.has(digest);
  }

  /** See BlobPool.put: verified while streaming, visible only once complete. */
  putBlob(
    source: Readable | AsyncIterable<Uint8Array> | Uint8Array,
    expectedDigest?: string,
    expectedSize?: number,
  ): Promise<BlobInfo> {
    return this.blobs.put(source, expectedDigest, expectedSize);
  }

  linkBlob(repo: string, digest: string): Promise<void> {
    return this.repositories.linkBlob(repo, digest);
  }

  /** See RepositoryIndex.putManifest: every referenced blob must be in the pool first. */
  putManifest(
    repo: string,
    reference: string,
    bytes: Uint8Array,
    mediaType?: string,
  ): Promise<{ digest: string; mediaType: string; subject: string | undefined }> {
    return this.repositories.putManifest(repo, reference, bytes, mediaType);
  }

  getManifest(repo: string, reference: string): Promise<StoredManifest | undefined> {
    return this.repositories.getManifest(repo, reference);
  }

  createUpload(repo: string): Promise<string> {
    return this.uploads.create(repo);
  }

  uploadSize(repo: string, id: string): Promise<number> {
    return this.uploads.size(repo, id);
  }

  appendUpload(repo: string, id: string, source: Readable, start?: number, length?: number): Promise<number> {
    return this.uploads.append(repo, id, source, start, length);
  }

  completeUpload(repo: string, id: string, digest: string, last?: Readable, length?: number): Promise<BlobInfo> {
    return this.uploads.complete(repo, id, digest, last, length);
  }

  expireUploads(now?: number): Promise<number> {
    return this.uploads.expire(now);
  }
}
