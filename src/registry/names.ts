/**
 * Repository names and tags, checked against the distribution spec's grammar ("Pulling manifests"). Names come
 * from the raw (undecoded) request path, so `%2e%2e` and other escapes never match and are rejected.
 */
const NAME_RE = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$/;
const TAG_RE = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;
/** Clients limit host + "/" + name to 255 characters; a name alone may not be longer. */
export const MAX_NAME_LENGTH = 255;

export function isRepositoryName(name: string): boolean {
  return name.length <= MAX_NAME_LENGTH && NAME_RE.test(name);
}

export function isTag(tag: string): boolean {
  return TAG_RE.test(tag);
}

/** The spec's "lexical order (case-insensitive alphanumeric)", stable for equal-ignoring-case names. */
export function compareLexical(a: string, b: string): number {
  const la = a.toLowerCase();
  const lb = b.toLowerCase();
  if (la !== lb) return la < lb ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
