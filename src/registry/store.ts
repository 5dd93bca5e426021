import { type Hash, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Descriptor } from '../oci/descriptor.js';
import { digestOf, digestOfHash, hexOf, isSha256Digest, sha256Hash } from '../oci/digest.js';
import { isRepositoryName, isTag } from '../oci/names.js';
import { parseDigest } from './digest.js';
import { digestInvalid, manifestInvalid, manifestUnknown, RegistryError, uploadUnknown } from './errors.js';
import { HashingFileWriter } from './file-writer.js';
import { parseManifest, referrerDescriptor } from './manifest.js';

/**
 * The registry's on-disk store: one content-addressed blob pool plus per-repository links (DESIGN §4).
 *
 *   blobs/sha256/<2 hex>/<hex>                        blob content (manifests too), written once, renamed into place
 *   repositories/<name>/_layers/sha256/<hex>          "this repository holds this blob"
 *   repositories/<name>/_manifests/revisions/sha256/<hex>   {"mediaType": ...}: a manifest of this repository
 *   repositories/<name>/_manifests/tags/<tag>         the digest the tag points at
 *   repositories/<name>/_referrers/<subject hex>/<hex>      the referrer's descriptor (referrers API)
 *   uploads/<uuid>/{data,meta.json}                   upload sessions (expire after uploadTtlMs)
 *   tmp/                                              in-flight writes; emptied at open
 *
 * Every write goes to a temp file on the same filesystem while hashing, is fsynced, then renamed: a crash leaves
 * a stray temp file (removed at the next open), never a truncated blob. Repository names are validated before
 * they reach here, and their components cannot start with '_', so they never collide with the link folders.
 */
export interface BlobInfo {
  digest: string;
  size: number;
}

export interface StoredManifest {
  digest: string;
  mediaType: string;
  bytes: Buffer;
}

export interface StoreOptions {
  /** Upload sessions untouched for this long are removed (default 24 h). */
  uploadTtlMs?: number;
  /**
   * fsync blob data before it becomes visible (default true). false trades durability after a power loss (not
   * after a process crash: renames still publish only complete files) for speed, like distribution's filesystem
   * driver, which never fsyncs.
   */
  fsync?: boolean;
}

interface UploadState {
  repo: string;
  /** Hash of the first `hashed` bytes of the session's data file (lost on restart: then rehashed at the end). */
  hash: Hash | undefined;
  hashed: number;
  busy: boolean;
}

export const DEFAULT_UPLOAD_TTL_MS = 24 * 60 * 60 * 1000;
const UPLOAD_ID_RE = /^[0-9a-f-]{36}$/;

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

export class RegistryStore {
  readonly #uploads = new Map<string, UploadState>();
  readonly uploadTtlMs: number;
  readonly fsync: boolean;

  private constructor(
    readonly root: string,
    options: StoreOptions,
  ) {
    this.uploadTtlMs = options.uploadTtlMs ?? DEFAULT_UPLOAD_TTL_MS;
    this.fsync = options.fsync ?? true;
  }

  /** Open (creating) a store at `root`: empties tmp/ and removes expired upload sessions. */
  static async open(root: string, options: StoreOptions = {}): Promise<RegistryStore> {
    const store = new RegistryStore(root, options);
    await rm(join(root, 'tmp'), { recursive: true, force: true });
    for (const dir of ['tmp', 'blobs/sha256', 'repositories', 'uploads'])
      await mkdir(join(root, dir), { recursive: true });
    await store.expireUploads();
    return store;
  }

  // ---- paths (also used by gc) ----
  blobPath(digest: string): string {
    const hex = hexOf(digest);
    return join(this.root, 'blobs', 'sha256', hex.slice(0, 2), hex);
  }
  /** Checks the name again: store callers outside HTTP must not be able to escape the storage directory. */
  repoPath(repo: string, ...parts: string[]): string {
    if (!isRepositoryName(repo))
      throw new RegistryError(400, 'NAME_INVALID', `invalid repository name '${repo}'`, { name: repo });
    return join(this.root, 'repositories', repo, ...parts);
  }
  tempPath(): string {
    return join(this.root, 'tmp', randomUUID());
  }

  // ---- blobs ----

  async statBlob(digest: string): Promise<BlobInfo | undefined> {
    if (!isSha256Digest(digest)) return undefined;
    try {
      const info = await stat(this.blobPath(digest));
      return { digest, size: info.size };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async hasBlob(digest: string): Promise<boolean> {
    return (await this.statBlob(digest)) !== undefined;
  }

  /**
   * Store a blob from a stream (never held in memory). With `expectedDigest` the content is verified while
   * streaming and rejected (DIGEST_INVALID) before it becomes visible; with `expectedSize`, SIZE_INVALID.
   */
  async putBlob(
    source: Readable | AsyncIterable<Uint8Array> | Uint8Array,
    expectedDigest?: string,
    expectedSize?: number,
  ): Promise<BlobInfo> {
    if (expectedDigest !== undefined) parseDigest(expectedDigest);
    const temp = this.tempPath();
    const handle = await open(temp, 'wx');
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

  /** Rename a fully written, fsynced file into the pool. Same content wins either way: rename is atomic. */
  async #commit(temp: string, digest: string): Promise<void> {
    const target = this.blobPath(digest);
    await mkdir(dirname(target), { recursive: true });
    await rename(temp, target);
  }

  /** Open a blob for reading: the caller streams from `fd` and closes `handle`. Undefined when absent. */
  async openBlob(digest: string): Promise<{ handle: fs.promises.FileHandle; size: number } | undefined> {
    if (!isSha256Digest(digest)) return undefined;
    try {
      const handle = await open(this.blobPath(digest), 'r');
      const info = await handle.stat();
      return { handle, size: info.size };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /** Whole small blob (manifests, configs). */
  async readBlob(digest: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.blobPath(digest));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  // ---- repositories ----

  async #writeAtomic(path: string, data: string): Promise<void> {
    const temp = this.tempPath();
    const handle = await open(temp, 'wx');
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await mkdir(dirname(path), { recursive: true });
    await rename(temp, path);
  }

  async linkBlob(repo: string, digest: string): Promise<void> {
    parseDigest(digest);
    await this.#writeAtomic(this.repoPath(repo, '_layers', 'sha256', hexOf(digest)), '');
  }

  /** Remove a blob from a repository (content stays until gc). False when it was not there. */
  async unlinkBlob(repo: string, digest: string): Promise<boolean> {
    parseDigest(digest);
    try {
      await unlink(this.repoPath(repo, '_layers', 'sha256', hexOf(digest)));
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
  }

  /** A blob is readable through a repository when linked as a layer/config or as one of its manifests. */
  async blobInRepo(repo: string, digest: string): Promise<BlobInfo | undefined> {
    if (!isSha256Digest(digest)) return undefined;
    const linked =
      (await exists(this.repoPath(repo, '_layers', 'sha256', hexOf(digest)))) ||
      (await exists(this.repoPath(repo, '_manifests', 'revisions', 'sha256', hexOf(digest))));
    return linked ? this.statBlob(digest) : undefined;
  }

  async hasRepository(repo: string): Promise<boolean> {
    return (await exists(this.repoPath(repo, '_manifests'))) || (await exists(this.repoPath(repo, '_layers')));
  }

  /** Every repository name, sorted. */
  async listRepositories(): Promise<string[]> {
    const found: string[] = [];
    const walk = async (prefix: string) => {
      const entries = await listDir(join(this.root, 'repositories', prefix));
      if (entries.includes('_manifests') || entries.includes('_layers')) found.push(prefix);
      for (const entry of entries) if (!entry.startsWith('_')) await walk(prefix ? `${prefix}/${entry}` : entry);
    };
    await walk('');
    return found.sort();
  }

  // ---- manifests ----

  /** Resolve a tag or digest to a manifest digest of `repo`, or undefined. */
  async resolve(repo: string, reference: string): Promise<string | undefined> {
    if (reference.includes(':')) {
      const digest = parseDigest(reference);
      return (await exists(this.repoPath(repo, '_manifests', 'revisions', 'sha256', hexOf(digest))))
        ? digest
        : undefined;
    }
    if (!isTag(reference)) return undefined;
    try {
      const digest = (await readFile(this.repoPath(repo, '_manifests', 'tags', reference), 'utf8')).trim();
      return (await exists(this.repoPath(repo, '_manifests', 'revisions', 'sha256', hexOf(digest))))
        ? digest
        : undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async getManifest(repo: string, reference: string): Promise<StoredManifest | undefined> {
    const digest = await this.resolve(repo, reference);
    if (!digest) return undefined;
    try {
      const link = JSON.parse(
        await readFile(this.repoPath(repo, '_manifests', 'revisions', 'sha256', hexOf(digest)), 'utf8'),
      ) as { mediaType: string };
      const bytes = await this.readBlob(digest);
      return bytes ? { digest, mediaType: link.mediaType, bytes } : undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /**
   * Validate and store a manifest under a tag or its digest. Every config/layer blob must exist in the store
   * (it is then linked into `repo`) and every index child must be a manifest of `repo`: else
   * MANIFEST_BLOB_UNKNOWN. A digest reference must match the bytes (DIGEST_INVALID). Returns the digest and the
   * subject digest when the manifest has one (the HTTP layer answers with `OCI-Subject`).
   */
  async putManifest(
    repo: string,
    reference: string,
    bytes: Uint8Array,
    mediaType?: string,
  ): Promise<{ digest: string; mediaType: string; subject: string | undefined }> {
    const byDigest = reference.includes(':');
    if (byDigest) parseDigest(reference);
    else if (!isTag(reference)) throw manifestInvalid(`invalid tag '${reference}'`, { tag: reference });
    const parsed = parseManifest(bytes, mediaType);
    const digest = digestOf(bytes);
    if (byDigest && digest !== reference)
      throw digestInvalid('manifest does not match the digest in the URL', { expected: reference, actual: digest });
    const missing: string[] = [];
    for (const blob of parsed.requiredBlobs) if (!(await this.hasBlob(blob))) missing.push(blob);
    for (const child of parsed.children) if (!(await this.resolve(repo, child))) missing.push(child);
    if (missing.length > 0) {
      const error = new RegistryError(
        400,
        'MANIFEST_BLOB_UNKNOWN',
        `manifest references ${missing.length} blob(s) or manifest(s) unknown to the registry`,
        { missing },
      );
      throw error;
    }
    for (const blob of parsed.requiredBlobs) await this.linkBlob(repo, blob);
    if (!(await this.hasBlob(digest))) await this.putBlob(bytes, digest);
    await this.#writeAtomic(
      this.repoPath(repo, '_manifests', 'revisions', 'sha256', hexOf(digest)),
      JSON.stringify({ mediaType: parsed.mediaType }),
    );
    if (parsed.subject) {
      const descriptor = referrerDescriptor(parsed, digest, bytes.byteLength);
      await this.#writeAtomic(
        this.repoPath(repo, '_referrers', hexOf(parsed.subject.digest), hexOf(digest)),
        JSON.stringify(descriptor),
      );
    }
    if (!byDigest) await this.#writeAtomic(this.repoPath(repo, '_manifests', 'tags', reference), digest);
    return { digest, mediaType: parsed.mediaType, subject: parsed.subject?.digest };
  }

  /**
   * Delete by tag (only the tag) or by digest (the manifest, every tag pointing at it, and its referrer entry).
   * Throws MANIFEST_UNKNOWN when absent.
   */
  async deleteManifest(repo: string, reference: string): Promise<void> {
    if (!reference.includes(':')) {
      if (!isTag(reference) || !(await this.resolve(repo, reference))) throw manifestUnknown(reference);
      await unlink(this.repoPath(repo, '_manifests', 'tags', reference));
      return;
    }
    const digest = parseDigest(reference);
    const manifest = await this.getManifest(repo, digest);
    if (!manifest) throw manifestUnknown(reference);
    for (const tag of await this.listTags(repo)) {
      if ((await this.resolve(repo, tag)) === digest)
        await rm(this.repoPath(repo, '_manifests', 'tags', tag), { force: true });
    }
    await rm(this.repoPath(repo, '_manifests', 'revisions', 'sha256', hexOf(digest)), { force: true });
    try {
      const parsed = parseManifest(manifest.bytes, manifest.mediaType);
      if (parsed.subject)
        await rm(this.repoPath(repo, '_referrers', hexOf(parsed.subject.digest), hexOf(digest)), { force: true });
    } catch {
      // A stored manifest always parsed once; nothing to unlink if it somehow does not.
    }
  }

  /** Tags of `repo` (unsorted), [] when none. */
  async listTags(repo: string): Promise<string[]> {
    return (await listDir(this.repoPath(repo, '_manifests', 'tags'))).filter(isTag);
  }

  /** Descriptors of the manifests in `repo` whose subject is `digest`. */
  async referrers(repo: string, digest: string): Promise<Descriptor[]> {
    const dir = this.repoPath(repo, '_referrers', hexOf(digest));
    const result: Descriptor[] = [];
    for (const name of (await listDir(dir)).sort()) {
      if (!(await exists(this.repoPath(repo, '_manifests', 'revisions', 'sha256', name)))) continue;
      try {
        result.push(JSON.parse(await readFile(join(dir, name), 'utf8')) as Descriptor);
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    }
    return result;
  }

  /** Digests of `repo`'s manifests. */
  async manifestDigests(repo: string): Promise<string[]> {
    return (await listDir(this.repoPath(repo, '_manifests', 'revisions', 'sha256')))
      .filter((hex) => /^[a-f0-9]{64}$/.test(hex))
      .map((hex) => `sha256:${hex}`);
  }

  /** True when some manifest of `repo` lists `digest` among its layers (not as config). */
  async isLayer(repo: string, digest: string): Promise<boolean> {
    for (const manifestDigest of await this.manifestDigests(repo)) {
      const manifest = await this.getManifest(repo, manifestDigest);
      if (!manifest) continue;
      try {
        if (parseManifest(manifest.bytes, manifest.mediaType).layers.includes(digest)) return true;
      } catch {}
    }
    return false;
  }

  // ---- uploads (spec "Pushing blobs": POST, PATCH, PUT, GET status, DELETE) ----

  #uploadDir(id: string): string {
    return join(this.root, 'uploads', id);
  }

  async createUpload(repo: string): Promise<string> {
    this.repoPath(repo);
    const id = randomUUID();
    await mkdir(this.#uploadDir(id));
    await fs.promises.writeFile(join(this.#uploadDir(id), 'data'), '');
    await fs.promises.writeFile(join(this.#uploadDir(id), 'meta.json'), JSON.stringify({ repo, created: Date.now() }));
    this.#uploads.set(id, { repo, hash: sha256Hash(), hashed: 0, busy: false });
    return id;
  }

  async #session(repo: string, id: string): Promise<UploadState> {
    if (!UPLOAD_ID_RE.test(id)) throw uploadUnknown(id);
    const known = this.#uploads.get(id);
    if (known) {
      if (known.repo !== repo) throw uploadUnknown(id);
      return known;
    }
    try {
      const meta = JSON.parse(await readFile(join(this.#uploadDir(id), 'meta.json'), 'utf8')) as { repo: string };
      if (meta.repo !== repo) throw uploadUnknown(id);
      const state: UploadState = { repo, hash: undefined, hashed: 0, busy: false };
      this.#uploads.set(id, state);
      return state;
    } catch (error) {
      if (error instanceof RegistryError) throw error;
      throw uploadUnknown(id);
    }
  }

  /** Bytes received so far in an upload session. */
  async uploadSize(repo: string, id: string): Promise<number> {
    await this.#session(repo, id);
    try {
      return (await stat(join(this.#uploadDir(id), 'data'))).size;
    } catch {
      throw uploadUnknown(id);
    }
  }

  /**
   * Append a chunk. With `start` (from Content-Range) the chunk must begin exactly where the data ends, else
   * 416 (spec: out-of-order chunks). Returns the new size.
   */
  async appendUpload(repo: string, id: string, source: Readable, start?: number, length?: number): Promise<number> {
    const state = await this.#session(repo, id);
    if (state.busy) throw new RegistryError(409, 'BLOB_UPLOAD_INVALID', 'another request is writing this upload');
    state.busy = true;
    try {
      const size = await this.uploadSize(repo, id);
      if (start !== undefined && start !== size) {
        throw new RegistryError(
          416,
          'BLOB_UPLOAD_INVALID',
          `chunk starts at ${start} but the upload has ${size} bytes`,
          { expectedStart: size },
          { Range: `0-${Math.max(0, size - 1)}` },
        );
      }
      const handle = await open(join(this.#uploadDir(id), 'data'), 'a');
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
  async completeUpload(repo: string, id: string, digest: string, last?: Readable, length?: number): Promise<BlobInfo> {
    parseDigest(digest);
    if (last) await this.appendUpload(repo, id, last, undefined, length);
    const state = await this.#session(repo, id);
    if (state.busy) throw new RegistryError(409, 'BLOB_UPLOAD_INVALID', 'another request is writing this upload');
    state.busy = true;
    try {
      const data = join(this.#uploadDir(id), 'data');
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
      await this.#commit(data, digest);
      await this.linkBlob(repo, digest);
      await rm(this.#uploadDir(id), { recursive: true, force: true });
      this.#uploads.delete(id);
      return { digest, size };
    } finally {
      state.busy = false;
    }
  }

  async cancelUpload(repo: string, id: string): Promise<void> {
    await this.#session(repo, id);
    await rm(this.#uploadDir(id), { recursive: true, force: true });
    this.#uploads.delete(id);
  }

  /** Remove upload sessions not written to for `uploadTtlMs`. Returns how many were removed. */
  async expireUploads(now = Date.now()): Promise<number> {
    let removed = 0;
    for (const id of await listDir(join(this.root, 'uploads'))) {
      const dir = this.#uploadDir(id);
      let last = 0;
      try {
        last = (await stat(join(dir, 'data'))).mtimeMs;
      } catch {}
      if (now - last >= this.uploadTtlMs && !this.#uploads.get(id)?.busy) {
        await rm(dir, { recursive: true, force: true });
        this.#uploads.delete(id);
        removed++;
      }
    }
    return removed;
  }
}
