import { readFile, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { digestOf, isSha256Digest } from '../../oci/digest.js';
import { isTag } from '../../oci/names.js';
import { parseDigest } from '../digest.js';
import { digestInvalid, manifestInvalid, manifestUnknown, RegistryError } from '../errors.js';
import { parseManifest, referrerDescriptor } from '../manifest.js';
import type { BlobInfo, BlobPool } from './blob-pool.js';
import { exists, isMissing, listDir, writeAtomic } from './files.js';
import type { StorageLayout } from './layout.js';
import { ReferrerIndex } from './referrer-index.js';

export interface StoredManifest {
  digest: string;
  mediaType: string;
  bytes: Buffer;
}

/**
 * What each repository holds, as links into the shared blob pool: its blobs (layers and configs), its manifest
 * revisions, its tags and its referrers. A manifest is accepted only when everything it references is present.
 * It is stored all-or-nothing: its blob links, referrer entry and tag are written (atomically, one file each)
 * before its revision, the one file that makes it reachable (by digest, through a tag, in a referrers list), so a
 * failure or a crash before the revision leaves nothing of it reachable. A tag file holds the new digest and the
 * one it named before: until the new revision exists, the tag still names the old manifest.
 */
export class RepositoryIndex {
  readonly referrers: ReferrerIndex;

  constructor(
    private readonly layout: StorageLayout,
    private readonly blobs: BlobPool,
  ) {
    this.referrers = new ReferrerIndex(layout);
  }

  async linkBlob(repo: string, digest: string): Promise<void> {
    parseDigest(digest);
    await this.layout.gate.write(() => writeAtomic(this.layout.temp(), this.layout.layerLink(repo, digest), ''));
  }

  /** Remove a blob from a repository (content stays until gc). False when it was not there. */
  async unlinkBlob(repo: string, digest: string): Promise<boolean> {
    parseDigest(digest);
    try {
      await unlink(this.layout.layerLink(repo, digest));
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
      (await exists(this.layout.layerLink(repo, digest))) || (await exists(this.layout.revision(repo, digest)));
    return linked ? this.blobs.stat(digest) : undefined;
  }

  async hasRepository(repo: string): Promise<boolean> {
    return (
      (await exists(this.layout.repository(repo, '_manifests'))) ||
      (await exists(this.layout.repository(repo, '_layers')))
    );
  }

  /** Every repository name, sorted. */
  async listRepositories(): Promise<string[]> {
    const found: string[] = [];
    const walk = async (prefix: string) => {
      const entries = await listDir(join(this.layout.repositories(), prefix));
      if (entries.includes('_manifests') || entries.includes('_layers')) found.push(prefix);
      for (const entry of entries) if (!entry.startsWith('_')) await walk(prefix ? `${prefix}/${entry}` : entry);
    };
    await walk('');
    return found.sort();
  }

  /** Resolve a tag or digest to a manifest digest of `repo`, or undefined. */
  async resolve(repo: string, reference: string): Promise<string | undefined> {
    if (reference.includes(':')) {
      const digest = parseDigest(reference);
      return (await exists(this.layout.revision(repo, digest))) ? digest : undefined;
    }
    if (!isTag(reference)) return undefined;
    try {
      // The first digest whose revision exists: the newest, or the one before when the newest never committed.
      for (const line of (await readFile(this.layout.tag(repo, reference), 'utf8')).split('\n')) {
        const digest = line.trim();
        if (isSha256Digest(digest) && (await exists(this.layout.revision(repo, digest)))) return digest;
      }
      return undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async getManifest(repo: string, reference: string): Promise<StoredManifest | undefined> {
    const digest = await this.resolve(repo, reference);
    if (!digest) return undefined;
    try {
      const link = JSON.parse(await readFile(this.layout.revision(repo, digest), 'utf8')) as { mediaType: string };
      const bytes = await this.blobs.read(digest);
      return bytes ? { digest, mediaType: link.mediaType, bytes } : undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /**
   * Validate and store a manifest under a tag or its digest. Every config/layer blob must exist in the pool
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
    return this.layout.gate.write(() => this.#putManifest(repo, reference, bytes, mediaType));
  }

  async #putManifest(
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
    for (const blob of parsed.requiredBlobs) if (!(await this.blobs.has(blob))) missing.push(blob);
    for (const child of parsed.children) if (!(await this.resolve(repo, child))) missing.push(child);
    if (missing.length > 0) {
      throw new RegistryError(
        400,
        'MANIFEST_BLOB_UNKNOWN',
        `manifest references ${missing.length} blob(s) or manifest(s) unknown to the registry`,
        { missing },
      );
    }
    for (const blob of parsed.requiredBlobs) await this.linkBlob(repo, blob);
    if (!(await this.blobs.has(digest))) await this.blobs.put(bytes, digest);
    const temp = () => this.layout.temp();
    if (parsed.subject)
      await this.referrers.add(repo, parsed.subject.digest, referrerDescriptor(parsed, digest, bytes.byteLength));
    if (!byDigest) {
      const before = await this.resolve(repo, reference);
      const lines = before && before !== digest ? `${digest}\n${before}\n` : `${digest}\n`;
      await writeAtomic(temp(), this.layout.tag(repo, reference), lines);
    }
    // The commit point: from here the manifest is reachable, with its tag and referrer entry already in place.
    await writeAtomic(temp(), this.layout.revision(repo, digest), JSON.stringify({ mediaType: parsed.mediaType }));
    return { digest, mediaType: parsed.mediaType, subject: parsed.subject?.digest };
  }

  /**
   * Store a manifest a pull-through cache fetched by digest (pull-through/pull-through.ts), verified by the caller.
   * Unlike a push its blobs need not be present: they are fetched from the upstream when asked for.
   */
  async putPulledManifest(
    repo: string,
    digest: string,
    bytes: Uint8Array,
    mediaType?: string,
  ): Promise<StoredManifest> {
    const parsed = parseManifest(bytes, mediaType);
    if (digestOf(bytes) !== digest) throw digestInvalid('manifest does not match its digest', { expected: digest });
    if (!(await this.blobs.has(digest))) await this.blobs.put(bytes, digest);
    await writeAtomic(
      this.layout.temp(),
      this.layout.revision(repo, digest),
      JSON.stringify({ mediaType: parsed.mediaType }),
    );
    return { digest, mediaType: parsed.mediaType, bytes: Buffer.from(bytes) };
  }

  /**
   * Delete by tag (only the tag) or by digest (the manifest, every tag pointing at it, and its referrer entry).
   * Throws MANIFEST_UNKNOWN when absent.
   */
  async deleteManifest(repo: string, reference: string): Promise<void> {
    if (!reference.includes(':')) {
      if (!isTag(reference) || !(await this.resolve(repo, reference))) throw manifestUnknown(reference);
      await unlink(this.layout.tag(repo, reference));
      return;
    }
    const digest = parseDigest(reference);
    const manifest = await this.getManifest(repo, digest);
    if (!manifest) throw manifestUnknown(reference);
    for (const tag of await this.listTags(repo)) {
      if ((await this.resolve(repo, tag)) === digest) await rm(this.layout.tag(repo, tag), { force: true });
    }
    await rm(this.layout.revision(repo, digest), { force: true });
    try {
      const parsed = parseManifest(manifest.bytes, manifest.mediaType);
      if (parsed.subject) await this.referrers.remove(repo, parsed.subject.digest, digest);
    } catch {
      // A stored manifest always parsed once; nothing to unlink if it somehow does not.
    }
  }

  /** Tags of `repo` (unsorted), [] when none. */
  async listTags(repo: string): Promise<string[]> {
    return (await listDir(this.layout.tags(repo))).filter(isTag);
  }

  /** Digests of `repo`'s manifests. */
  async manifestDigests(repo: string): Promise<string[]> {
    return (await listDir(this.layout.revisions(repo)))
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
}
