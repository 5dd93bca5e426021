import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { hexOf } from '../../oci/digest.js';
import { isRepositoryName } from '../../oci/names.js';
import { RegistryError } from '../errors.js';
import { GcGate } from './gc-gate.js';

/**
 * Where the registry keeps what, under its storage directory:
 *
 *   blobs/sha256/<2 hex>/<hex>                        blob content (manifests too), written once, renamed into place
 *   repositories/<name>/_layers/sha256/<hex>          "this repository holds this blob"
 *   repositories/<name>/_manifests/revisions/sha256/<hex>   {"mediaType": ...}: a manifest of this repository
 *   repositories/<name>/_manifests/tags/<tag>         the digest the tag points at
 *   repositories/<name>/_referrers/<subject hex>/<hex>      the referrer's descriptor (referrers API)
 *   uploads/<uuid>/{data,meta.json}                   upload sessions (expire after uploadTtlMs)
 *   serving/<pid>                                     the command of a live process serving the store (serving.ts)
 *   tmp/<pid>/                                        in-flight writes of process <pid>; removed at open once <pid>
 *                                                     is gone (never another live process's)
 *
 * Repository names are validated before they reach here, and their components cannot start with '_', so they
 * never collide with the link folders.
 */
export class StorageLayout {
  readonly gate: GcGate;

  constructor(readonly root: string) {
    this.gate = GcGate.of(resolve(root));
  }

  /** The folders `open` creates. */
  static readonly FOLDERS = ['tmp', 'blobs/sha256', 'repositories', 'uploads', 'serving'];

  blobPool(): string {
    return join(this.root, 'blobs', 'sha256');
  }

  blob(digest: string): string {
    const hex = hexOf(digest);
    return join(this.blobPool(), hex.slice(0, 2), hex);
  }

  repositories(): string {
    return join(this.root, 'repositories');
  }

  /** Checks the name again: store callers outside HTTP must not be able to escape the storage directory. */
  repository(repo: string, ...parts: string[]): string {
    if (!isRepositoryName(repo))
      throw new RegistryError(400, 'NAME_INVALID', `invalid repository name '${repo}'`, { name: repo });
    return join(this.repositories(), repo, ...parts);
  }

  layerLinks(repo: string): string {
    return this.repository(repo, '_layers', 'sha256');
  }

  layerLink(repo: string, digest: string): string {
    return join(this.layerLinks(repo), hexOf(digest));
  }

  revisions(repo: string): string {
    return this.repository(repo, '_manifests', 'revisions', 'sha256');
  }

  revision(repo: string, digest: string): string {
    return join(this.revisions(repo), hexOf(digest));
  }

  tags(repo: string): string {
    return this.repository(repo, '_manifests', 'tags');
  }

  tag(repo: string, tag: string): string {
    return join(this.tags(repo), tag);
  }

  referrers(repo: string, subject: string): string {
    return this.repository(repo, '_referrers', hexOf(subject));
  }

  referrer(repo: string, subject: string, digest: string): string {
    return join(this.referrers(repo, subject), hexOf(digest));
  }

  uploads(): string {
    return join(this.root, 'uploads');
  }

  upload(id: string, file?: 'data' | 'meta.json'): string {
    return file ? join(this.uploads(), id, file) : join(this.uploads(), id);
  }

  /** A fresh path for an in-flight write, on the same filesystem as its destination (so rename is atomic). */
  temp(): string {
    return join(this.processTemp(), randomUUID());
  }

  /** This process's temp space: another process opening the store never removes it while we live. */
  processTemp(): string {
    return join(this.root, 'tmp', String(process.pid));
  }
}
