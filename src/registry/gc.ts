import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseManifest } from './manifest.js';
import type { RegistryStore } from './store.js';

export interface GcOptions {
  /**
   * Blobs and links younger than this are never removed (default 1 h). This is what makes gc safe while the
   * registry serves: a push uploads blobs before the manifest that references them, and a blob written or
   * linked during the sweep is always younger than the grace period.
   */
  graceMs?: number;
  dryRun?: boolean;
  now?: number;
}

export interface GcResult {
  manifests: number;
  markedBlobs: number;
  removedBlobs: string[];
  removedLinks: number;
  freedBytes: number;
}

async function list(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch {
    return [];
  }
}

async function ageMs(path: string, now: number): Promise<number> {
  try {
    return now - (await stat(path)).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * Mark and sweep. Mark: every manifest revision of every repository, with its config and layers. Sweep:
 * repository layer links to unmarked blobs, then pool blobs that are neither marked nor linked, both only when
 * older than the grace period. Untagged manifests are kept (they are still pullable by digest).
 *
 * Inside one process gc runs alone (storage/gc-gate.ts): writes in flight finish first and new ones wait, so a
 * manifest either is marked or checks its blobs after the sweep. A gate rather than re-marking the manifests
 * written during gc, because a push validates its blobs before it writes its revision: a re-mark can run between
 * the two and still miss it. Another process's pushes are not gated: the CLI's gc refuses while a registry
 * serves the store (store.ts servingProcesses).
 */
export function collectGarbage(store: RegistryStore, options: GcOptions = {}): Promise<GcResult> {
  return store.layout.gate.collect(() => markAndSweep(store, options));
}

async function markAndSweep(store: RegistryStore, options: GcOptions): Promise<GcResult> {
  const graceMs = options.graceMs ?? 3_600_000;
  const now = options.now ?? Date.now();
  const marked = new Set<string>();
  const linked = new Set<string>();
  let manifests = 0;
  let removedLinks = 0;
  const repositories = await store.repositories.listRepositories();
  for (const repo of repositories) {
    for (const digest of await store.repositories.manifestDigests(repo)) {
      manifests++;
      marked.add(digest);
      const manifest = await store.repositories.getManifest(repo, digest);
      if (!manifest) continue;
      try {
        const parsed = parseManifest(manifest.bytes, manifest.mediaType);
        for (const blob of parsed.requiredBlobs) marked.add(blob);
      } catch {}
    }
  }
  for (const repo of repositories) {
    const dir = store.layout.layerLinks(repo);
    for (const hex of await list(dir)) {
      const digest = `sha256:${hex}`;
      if (marked.has(digest)) continue;
      if ((await ageMs(join(dir, hex), now)) < graceMs) {
        linked.add(digest);
        continue;
      }
      if (!options.dryRun) await rm(join(dir, hex), { force: true });
      removedLinks++;
    }
  }
  const removedBlobs: string[] = [];
  let freedBytes = 0;
  const pool = store.layout.blobPool();
  for (const prefix of await list(pool)) {
    for (const hex of await list(join(pool, prefix))) {
      const digest = `sha256:${hex}`;
      if (marked.has(digest) || linked.has(digest)) continue;
      const path = join(pool, prefix, hex);
      let info: Awaited<ReturnType<typeof stat>>;
      try {
        info = await stat(path);
      } catch {
        continue;
      }
      if (now - info.mtimeMs < graceMs) continue;
      if (!options.dryRun) await rm(path, { force: true });
      removedBlobs.push(digest);
      freedBytes += info.size;
    }
  }
  return { manifests, markedBlobs: marked.size, removedBlobs, removedLinks, freedBytes };
}
