/**
 * Mirror mode in the engine (docs/PROTOCOLS.md "Mirror mode"): a `pull:` oscontainer whose source lies under a
 * mirrored prefix is stored in the embedded registry under the prefix's path (`quay.io/ns/os` → `ns/os`), filled
 * from the upstream when one is set (the upstream serves the same repository paths), and named in the guest by its
 * upstream name, by digest: the guest's registries.conf.d drop-in sends that digest pull to the embedded registry.
 */
import { parseLocalSource } from '../oci/local-source.js';
import { parseReference } from '../oci/reference.js';
import { coveringPrefix } from '../scenario/mirror-prefix.js';
import type { MirrorSpec } from '../scenario/types.js';

export interface MirroredPull {
  /** Repository in the embedded registry. */
  repository: string;
  /** What to pull from: the upstream's copy when there is an upstream, else the reference as written. */
  source: string;
  /** The repository as the guest names it: `quay.io/ns/os`. */
  guestName: string;
}

export function mirroredPull(mirror: MirrorSpec | undefined, ref: string): MirroredPull | undefined {
  // A local image has no registry name to mirror: it is copied into the embedded registry as it is.
  if (!mirror || parseLocalSource(ref)) return undefined;
  const parsed = parseReference(ref);
  const name = `${parsed.registry}/${parsed.repository}`;
  const prefix = coveringPrefix(mirror.prefixes, name);
  if (!prefix) return undefined;
  const repository = `${prefix.path}${name.slice(prefix.prefix.length)}`;
  const tail = parsed.digest ? `@${parsed.digest}` : `:${parsed.tag ?? 'latest'}`;
  const source = mirror.upstream ? `${new URL(mirror.upstream).host}/${repository}${tail}` : ref;
  return { repository, source, guestName: name };
}

/** Whether the embedded registry pulls `repository` through from the upstream: it lies under a mirrored path. */
export function underPaths(paths: readonly string[], repository: string): boolean {
  return paths.some((path) => repository === path || repository.startsWith(`${path}/`));
}
