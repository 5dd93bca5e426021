import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Descriptor } from '../../oci/descriptor.js';
import { exists, isMissing, listDir, writeAtomic } from './files.js';
import type { StorageLayout } from './layout.js';

/**
 * The referrers of each subject (distribution spec "Listing Referrers"): one file per referring manifest,
 * holding the descriptor the API lists, written when the manifest is pushed and removed when it is deleted.
 * An entry whose manifest revision is gone is never listed.
 */
export class ReferrerIndex {
  constructor(private readonly layout: StorageLayout) {}

  async add(repo: string, subject: string, descriptor: Descriptor): Promise<void> {
    const path = this.layout.referrer(repo, subject, descriptor.digest);
    await writeAtomic(this.layout.temp(), path, JSON.stringify(descriptor));
  }

  async remove(repo: string, subject: string, digest: string): Promise<void> {
    await rm(this.layout.referrer(repo, subject, digest), { force: true });
  }

  /** Descriptors of the manifests in `repo` whose subject is `subject`, in digest order. */
  async list(repo: string, subject: string): Promise<Descriptor[]> {
    const dir = this.layout.referrers(repo, subject);
    const result: Descriptor[] = [];
    for (const name of (await listDir(dir)).sort()) {
      if (!(await exists(join(this.layout.revisions(repo), name)))) continue;
      try {
        result.push(JSON.parse(await readFile(join(dir, name), 'utf8')) as Descriptor);
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    }
    return result;
  }
}
