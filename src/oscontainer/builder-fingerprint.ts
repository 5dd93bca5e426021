/**
 * A fingerprint of the code that builds oscontainers: the sha256 of every compiled file of this module and of
 * src/oci (paths and contents). The engine's build cache (engine/real-deps.ts) keys on it, so a devpivot whose
 * builder changed (a new label, another layer layout) builds again instead of reusing a digest an older builder
 * recorded: same source and same fingerprint give the same bytes (builds are reproducible).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return sourceFiles(path);
      return /\.(js|ts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
    })
    .sort();
}

export function builderFingerprint(): string {
  if (cached) return cached;
  const here = dirname(fileURLToPath(import.meta.url));
  const hash = createHash('sha256');
  for (const dir of [here, join(here, '..', 'oci')]) {
    for (const file of sourceFiles(dir)) {
      hash.update(`${relative(join(here, '..'), file)}\0`);
      hash.update(readFileSync(file));
      hash.update('\0');
    }
  }
  cached = hash.digest('hex').slice(0, 16);
  return cached;
}
