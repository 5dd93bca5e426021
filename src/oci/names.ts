/**
 * Repository names and tags, by the distribution spec's grammar ("Pulling manifests"): path components of
 * `[a-z0-9]+` joined by `.`, `_`, `__` or dashes; tags of up to 128 word characters, dots and dashes.
 */
const NAME_GRAMMAR = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$/;
const TAG_GRAMMAR = /^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$/;
/** Clients limit host + "/" + name to 255 characters; a name alone may not be longer. */
export const MAX_REPOSITORY_NAME_LENGTH = 255;

/** The grammar alone, whatever the length (what an image reference is checked against). */
export function matchesNameGrammar(name: string): boolean {
  return NAME_GRAMMAR.test(name);
}

/** A name the registry accepts: the grammar and at most MAX_REPOSITORY_NAME_LENGTH characters. */
export function isRepositoryName(name: string): boolean {
  return name.length <= MAX_REPOSITORY_NAME_LENGTH && NAME_GRAMMAR.test(name);
}

export function isTag(tag: string): boolean {
  return TAG_GRAMMAR.test(tag);
}
