/**
 * Whether a reported boot is of a scenario's image or oscontainer (`booted: <name>` in `expect` and `assert`).
 * A legacy oscontainer or a disk image is identified by its ostree commit. An ostree-native oscontainer is
 * identified by its manifest digest: rpm-ostree and bootc import it with a merge commit, so the booted checksum is
 * not the image's `ostree.commit` (docs/PROTOCOLS.md, rpm-ostree "On-disk effects and identity"); the guest's report
 * names the image by digest (`image`: `host/repo@sha256:…`).
 */
import type { StepRuntime } from './runtime.js';

export interface ReportedBoot {
  commit: string;
  image?: string;
}

/** The identity `name` is matched by, or undefined while it is not known (an image no node booted yet). */
export function identityOf(
  runtime: Pick<StepRuntime, 'commitOf' | 'digestOf'>,
  name: string,
): { digest: string } | { commit: string } | undefined {
  const digest = runtime.digestOf(name);
  if (digest !== undefined) return { digest };
  const commit = runtime.commitOf(name);
  return commit === undefined ? undefined : { commit };
}

export function isBootOf(identity: { digest: string } | { commit: string }, boot: ReportedBoot): boolean {
  if ('digest' in identity) return boot.image?.endsWith(`@${identity.digest}`) === true;
  return boot.commit === identity.commit;
}

/** How a boot is named in a failure message: by image digest when it has one, else by commit. */
export function describeIdentity(identity: { digest: string } | { commit: string }): string {
  return 'digest' in identity ? identity.digest.slice(0, 19) : identity.commit.slice(0, 12);
}
