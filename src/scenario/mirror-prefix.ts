/**
 * A mirror prefix of `registry: { mirror: [...] }`: `host[:port]/path`, as the containers reference grammar spells
 * a repository name (containers/image docker/reference/regexp.go: domain components joined by `.`, an optional
 * port; path components `[a-z0-9]+` joined by `.`, `_`, `__` or dashes), the form `prefix` takes in
 * containers-registries.conf(5) (containers/image docs/containers-registries.conf.5.md, f28c9038). The first
 * component names a host only when it has a `.` or a `:` or is `localhost` (docker/reference/normalize.go):
 * anything else would be read as a Docker Hub namespace.
 */
import type { Node } from 'yaml';
import type { MirrorPrefix } from '../ignition/mirror-fragment.js';
import { matchesNameGrammar } from '../oci/names.js';
import { isRegistryHost } from '../oci/reference.js';
import type { DocumentReader } from './reader.js';

/** The embedded registry's own repositories (docs/PROTOCOLS.md "Mirror mode"): no mirror may claim them. */
const RESERVED = 'devpivot';

export type { MirrorPrefix };

export function readMirrorPrefix(r: DocumentReader, node: Node | null, what: string): MirrorPrefix {
  const text = r.string(node, what);
  const parsed = parseMirrorPrefix(text, what);
  if ('message' in parsed) r.fail(node, parsed.message, parsed.hint);
  return parsed;
}

/** `text` as a mirror prefix, or what is wrong with it (`what` names it in the message). */
export function parseMirrorPrefix(text: string, what: string): MirrorPrefix | { message: string; hint: string } {
  const example = 'like quay.io/openshift-release-dev';
  const problem = (message: string, hint: string) => ({ message: `${what} '${text}' ${message}`, hint });
  if (text.includes('*')) return problem('has a wildcard', `mirror whole namespaces, ${example}`);
  if (/[@]|:[^/]*$/.test(text.split('/').slice(1).join('/')))
    return problem('names a tag or digest', `a prefix is a repository namespace, ${example}`);
  const [host = '', ...path] = text.split('/');
  if (!isRegistryHost(host) || !(host.includes('.') || host.includes(':') || host === 'localhost'))
    return problem('does not start with a registry host', example);
  if (path.length === 0 || (path.length === 1 && path[0] === ''))
    return problem(
      'names a whole registry',
      `the embedded registry holds mirrored content under the prefix's path: name a namespace, ${example}`,
    );
  const bad = path.find((component) => component.includes('/') || !matchesNameGrammar(component));
  if (bad !== undefined)
    return problem(`has an invalid path component '${bad}'`, 'lowercase letters and digits, joined by . _ __ or -');
  if (path[0] === RESERVED) return problem(`uses the path '${RESERVED}/'`, "devpivot's own oscontainers live there");
  return { prefix: text, path: path.join('/') };
}

/** The prefix a repository name (`quay.io/ns/os`, no tag or digest) lies under, if any. */
export function coveringPrefix<T extends MirrorPrefix>(prefixes: readonly T[], name: string): T | undefined {
  return prefixes.find((p) => name === p.prefix || name.startsWith(`${p.prefix}/`));
}

/** Whether one repository path is `other` or lies under it. */
export function pathWithin(path: string, other: string): boolean {
  return path === other || path.startsWith(`${other}/`);
}
