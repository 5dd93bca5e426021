/**
 * Image references: `[docker://]host[:port]/repo[:tag][@sha256:…]`, with Docker Hub's defaults for short names
 * (`fedora` is `docker.io/library/fedora:latest`).
 */
import { UsageError } from '../core/errors.js';
import { isDigest } from './digest.js';
import { isTag, matchesNameGrammar } from './names.js';

export interface ImageReference {
  /** Registry host[:port] as written (`docker.io` for short names). */
  registry: string;
  repository: string;
  tag?: string;
  digest?: string;
}

export function parseReference(input: string): ImageReference {
  const text = input.startsWith('docker://') ? input.slice('docker://'.length) : input;
  const bad = (why: string) =>
    new UsageError(
      `invalid image reference '${input}': ${why}`,
      'write HOST:PORT/REPOSITORY[:TAG][@sha256:DIGEST], e.g. 127.0.0.1:5000/os/rhcos:v2',
      'BAD_REFERENCE',
    );
  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!isDigest(digest)) throw bad(`'${digest}' is not a digest`);
  }
  const slash = rest.indexOf('/');
  const first = slash >= 0 ? rest.slice(0, slash) : '';
  let registry = 'docker.io';
  if (slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    registry = first;
    rest = rest.slice(slash + 1);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!isTag(tag)) throw bad(`'${tag}' is not a valid tag`);
  }
  if (registry === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`;
  if (!matchesNameGrammar(rest)) throw bad(`'${rest}' is not a valid repository name`);
  if (!tag && !digest) tag = 'latest';
  return { registry, repository: rest, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** `host/repo:tag@digest`, as accepted by skopeo after `docker://`. */
export function formatReference(ref: ImageReference): string {
  return `${ref.registry}/${ref.repository}${ref.tag ? `:${ref.tag}` : ''}${ref.digest ? `@${ref.digest}` : ''}`;
}

/** The same image pinned by digest (tag dropped). */
export function byDigest(ref: ImageReference, digest: string): string {
  return `${ref.registry}/${ref.repository}@${digest}`;
}

const HOST_LABEL = '(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])';
const HOST = new RegExp(`^${HOST_LABEL}(?:\\.${HOST_LABEL})*(?::[0-9]+)?$`);

/** A registry host as references name one: DNS labels joined by dots, an optional port. */
export function isRegistryHost(text: string): boolean {
  return HOST.test(text);
}

/**
 * A reference that writes its registry host out (`HOST[:PORT]/REPOSITORY[:TAG][@sha256:…]`), with no Docker Hub
 * default: what a guest can pull as written. Such text holds only `[A-Za-z0-9._/:@-]`, safe inside single quotes.
 */
export function isHostQualified(text: string): boolean {
  try {
    const ref = parseReference(text);
    return text.startsWith(`${ref.registry}/`) && isRegistryHost(ref.registry);
  } catch {
    return false;
  }
}

/** Whether a pullspec ends in a sha256 digest (`…@sha256:<64 hex>`): what cannot move under a guest. */
export function isDigestPinned(pullspec: string): boolean {
  return /@sha256:[a-f0-9]{64}$/.test(pullspec);
}
