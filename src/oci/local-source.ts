/**
 * Images a developer has on this machine rather than in a registry, named as skopeo and podman name them
 * (containers-transports(5)): `containers-storage:IMAGE` (the calling user's podman storage: root's for root),
 * `oci-archive:PATH[:REF]` (a tar of an OCI layout, kola's `.ociarchive`) and `oci:DIR[:REF]` (an OCI layout
 * directory). A path and its REF are split at the first ':' as containers/image splits them
 * (oci/internal/oci_util.go `splitPathAndImageNonWindows`, containers/image v5.23, the version skopeo 1.9
 * vendors): a path cannot hold a ':'.
 */
import { isAbsolute, resolve } from 'node:path';

export type LocalSource =
  | { transport: 'containers-storage'; image: string }
  | { transport: 'oci-archive' | 'oci'; path: string; ref?: string };

const TRANSPORTS = ['containers-storage', 'oci-archive', 'oci'] as const;

/** `text` as a local source, or undefined when it names none of the three transports. */
export function parseLocalSource(text: string): LocalSource | undefined {
  const colon = text.indexOf(':');
  if (colon < 0) return undefined;
  const transport = text.slice(0, colon) as (typeof TRANSPORTS)[number];
  if (!TRANSPORTS.includes(transport)) return undefined;
  const rest = text.slice(colon + 1);
  if (transport === 'containers-storage') return { transport, image: rest };
  const split = rest.indexOf(':');
  const path = split < 0 ? rest : rest.slice(0, split);
  const ref = split < 0 ? undefined : rest.slice(split + 1);
  return { transport, path, ...(ref ? { ref } : {}) };
}

/** The source as skopeo takes it (`oci:DIR:REF`). */
export function formatLocalSource(source: LocalSource): string {
  if (source.transport === 'containers-storage') return `containers-storage:${source.image}`;
  return `${source.transport}:${source.path}${source.ref ? `:${source.ref}` : ''}`;
}

/** The source with a relative path made absolute against `base` (the scenario's directory, or the cwd). */
export function resolveLocalSource(source: LocalSource, base: string): LocalSource {
  if (source.transport === 'containers-storage' || isAbsolute(source.path)) return source;
  return { ...source, path: resolve(base, source.path) };
}

/** The repository a local source is stored under in the embedded registry: a name the registry accepts. */
export function localRepository(source: LocalSource): string {
  let name: string;
  if (source.transport === 'containers-storage') {
    // `[driver@root]host/repo:tag@digest`: the name without the store, the tag or the digest.
    name = source.image.replace(/^\[[^\]]*\]/, '').replace(/@.*$/, '');
    if (name.lastIndexOf(':') > name.lastIndexOf('/')) name = name.slice(0, name.lastIndexOf(':'));
  } else name = (source.path.split('/').filter(Boolean).pop() ?? 'image').replace(/\.(ociarchive|tar)$/, '');
  const clean = name
    .toLowerCase()
    .replace(/[^a-z0-9/]+/g, '-')
    .replace(/^[-/]+|[-/]+$/g, '')
    .replace(/\/+/g, '/');
  return `local/${clean || 'image'}`;
}
