/**
 * Which image of an index a platform gets, as containers/image chooses it (what podman, skopeo, and through the
 * containers-image-proxy ostree-ext, bootc and rpm-ostree do): `ChooseInstance` in
 * internal/manifest/docker_schema2_list.go (containers/image 04865d91; the OCI index's is the same loop) tries
 * each wanted platform in order and takes the first entry that matches it; `WantedPlatforms` and
 * `MatchesPlatform` in internal/pkg/platform/platform_matcher.go (6a7824ca) say what is wanted — the os, the
 * architecture, and the variants from the most capable to the least (arm: v7 v6 v5), then "no variant"; with no
 * variant wanted, "no variant", then the architecture's base variant (arm64: v8) — and that os, architecture and
 * variant must be equal. Not followed: the OCI index's preference between gzip and zstd instances of one platform
 * (oci_index.go), which only newer containers/image versions have.
 */
import type { Descriptor, Platform } from './descriptor.js';

/** The platform every node devpivot boots has (x86_64 guests). */
export const NODE_PLATFORM: Platform = { os: 'linux', architecture: 'amd64' };

const COMPATIBILITY: Record<string, string[]> = { arm: ['v7', 'v6', 'v5'], arm64: ['v8'] };
const BASE_VARIANT: Record<string, string> = { arm64: 'v8' };

/** `os/architecture[/variant]` (`linux/arm64/v8`), or undefined when it is not one. */
export function parsePlatform(text: string): Platform | undefined {
  const parts = text.split('/');
  if (parts.length < 2 || parts.length > 3 || parts.some((part) => !/^[a-z0-9_.-]+$/.test(part))) return undefined;
  const [os, architecture, variant] = parts as [string, string, string?];
  return { os, architecture, ...(variant ? { variant } : {}) };
}

export function formatPlatform(platform: Platform | undefined): string {
  if (!platform) return 'unknown';
  return `${platform.os}/${platform.architecture}${platform.variant ? `/${platform.variant}` : ''}`;
}

/** WantedPlatforms: the platforms `wanted` accepts, the preferred first. */
export function wantedPlatforms(wanted: Platform): Platform[] {
  let variants: string[];
  if (wanted.variant) {
    const order = COMPATIBILITY[wanted.architecture] ?? [];
    const at = order.indexOf(wanted.variant);
    variants = [...(at >= 0 ? order.slice(at) : [wanted.variant]), ''];
  } else {
    const base = BASE_VARIANT[wanted.architecture];
    variants = base ? ['', base] : [''];
  }
  return variants.map((variant) => ({ os: wanted.os, architecture: wanted.architecture, variant }));
}

/** MatchesPlatform: os, architecture and variant equal (an absent variant is ""). */
export function matchesPlatform(image: Platform | undefined, wanted: Platform): boolean {
  return (
    image?.os === wanted.os &&
    image.architecture === wanted.architecture &&
    (image.variant ?? '') === (wanted.variant ?? '')
  );
}

/** ChooseInstance: the entry of `manifests` for `wanted`, or undefined when none matches. */
export function chooseInstance(
  manifests: readonly Descriptor[],
  wanted: Platform = NODE_PLATFORM,
): Descriptor | undefined {
  for (const platform of wantedPlatforms(wanted)) {
    const found = manifests.find((entry) => matchesPlatform(entry.platform, platform));
    if (found) return found;
  }
  return undefined;
}
