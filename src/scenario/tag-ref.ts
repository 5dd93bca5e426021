/** `REPO:TAG` in the embedded registry: a node's `follow:` and a `tag` step's `as:`. */
import { isRepositoryName, isTag } from '../oci/names.js';

export interface TagRef {
  repository: string;
  tag: string;
}

/** The repository and tag of `REPO:TAG`, or undefined when it is not one (no host, no digest). */
export function parseTagRef(text: string): TagRef | undefined {
  const colon = text.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const repository = text.slice(0, colon);
  const tag = text.slice(colon + 1);
  if (!isRepositoryName(repository) || !isTag(tag) || repository.includes('@')) return undefined;
  return { repository, tag };
}

export const TAG_REF_HINT = 'write REPO:TAG, a repository of the embedded registry and a tag (e.g. os/stream:stable)';
