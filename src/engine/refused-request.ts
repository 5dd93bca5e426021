import { stripConsoleNoise } from './console-noise.js';

/**
 * rpm-ostree's refusal of a rebase to the reference the default deployment's origin already names (coreos/rpm-ostree
 * d5ef5f0c src/daemon/rpmostreed-transaction-types.cxx:91 and :139, `change_origin_refspec`): the client prints
 * `error: Old and new refs are equal: <ref>` and exits 1 before pulling, staging nothing. A refused request, not a
 * failed pivot: the node keeps running what it runs, as pivot's "Already at target".
 */
export const REFUSED_REQUEST = /(?:^|\]: )error: (Old and new refs are equal): (\S+)/;

/**
 * bootc's answer to a switch to the image the host's spec already names (bootc-dev/bootc 534c76ea
 * crates/lib/src/cli.rs:1436 switch_ostree): "Image specification is unchanged.", exit 0, nothing staged.
 */
export const UNCHANGED_SPEC = /(?:^|\]: )(Image specification is unchanged)\.$/;

/**
 * An upgrade whose image did not change: bootc's "No update available." (crates/lib/src/cli.rs:1360 upgrade) and
 * rpm-ostree's "No upgrade available." (d5ef5f0c src/daemon/rpmostreed-transaction-types.cxx:1608); nothing staged.
 */
export const NO_UPDATE = /(?:^|\]: )(No (?:update|upgrade) available)\.$/;

/**
 * The refusal in a tool's output (a console line or a request's own output), as a `guest.pivot.skipped` reason.
 * bootc's line names no image: `target` is the one requested (else the classifier's).
 */
export function refusedRequest(output: string, target = ''): { target: string; reason: string } | undefined {
  for (const raw of output.split('\n')) {
    const line = stripConsoleNoise(raw);
    const match = REFUSED_REQUEST.exec(line);
    if (match)
      return { target: match[2]!.replace(/^ostree-[a-z-]+:(?:docker:\/\/)?/, ''), reason: match[1]!.toLowerCase() };
    const unchanged = UNCHANGED_SPEC.exec(line) ?? NO_UPDATE.exec(line);
    if (unchanged) return { target, reason: unchanged[1]!.toLowerCase() };
  }
  return undefined;
}
