/**
 * Pullspecs written in a scenario (`pull:`, a node's `pivot:`, a `pivot` step's `to:`) or given as `devpivot up
 * --os-image`: an image reference by the grammar of `oci/reference.ts`, with a `sha256:` digest if any. A pivot
 * target must be a *full* pullspec, its registry host written out (`HOST[:PORT]/REPO[:TAG]` or `…@sha256:…`), so
 * that it can never be mistaken for an oscontainer name.
 */
import { isSha256Digest } from '../oci/digest.js';
import { parseLocalSource } from '../oci/local-source.js';
import { parseReference } from '../oci/reference.js';

export interface PullspecProblem {
  message: string;
  hint: string;
}

const HINT = 'like quay.io/org/os@sha256:<64 hex> or host:port/repo:tag';

/**
 * A pivot target meant as a pullspec rather than an oscontainer name (names have neither '/' nor '@', nor a
 * local image's transport: `containers-storage:`, `oci-archive:`, `oci:`).
 */
export function looksLikePullspec(text: string): boolean {
  return text.includes('/') || text.includes('@') || parseLocalSource(text) !== undefined;
}

/** What is wrong with `text` as an image reference to pull, or undefined when it is one. */
export function referenceProblem(text: string): PullspecProblem | undefined {
  const local = parseLocalSource(text);
  if (local)
    return (local.transport === 'containers-storage' ? local.image : local.path)
      ? undefined
      : {
          message: `'${text}' names no image`,
          hint: 'write containers-storage:IMAGE, oci-archive:PATH[:REF] or oci:DIR[:REF]',
        };
  let digest: string | undefined;
  try {
    digest = parseReference(text).digest;
  } catch (error) {
    return { message: (error as Error).message, hint: HINT };
  }
  if (digest !== undefined && !isSha256Digest(digest))
    return { message: `'${digest}' is not a sha256 digest`, hint: 'write @sha256: and 64 lowercase hex digits' };
  return undefined;
}

/** What is wrong with `text` as a full pullspec (a pivot target, `--os-image`), or undefined when it is one. */
export function fullPullspecProblem(text: string): PullspecProblem | undefined {
  const problem = referenceProblem(text);
  if (problem || parseLocalSource(text)) return problem;
  const bare = text.startsWith('docker://') ? text.slice('docker://'.length) : text;
  const first = bare.includes('/') ? bare.slice(0, bare.indexOf('/')) : '';
  // oci/reference.ts's rule for a registry host: a dot, a port, or localhost.
  if (!(first.includes('.') || first.includes(':') || first === 'localhost'))
    return {
      message: `'${text}' is not a full pullspec: it does not start with a registry host`,
      hint: 'write HOST[:PORT]/REPOSITORY[:TAG] or HOST[:PORT]/REPOSITORY@sha256:DIGEST, e.g. 127.0.0.1:5000/os/rhcos@sha256:…',
    };
  return undefined;
}
