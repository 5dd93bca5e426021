/**
 * Mirror mode's registries.conf.d drop-in (docs/PROTOCOLS.md "Mirror mode"): one `[[registry]]` per mirrored
 * prefix, its `location` the prefix itself, with `mirror-by-digest-only = true` and one `[[registry.mirror]]` at the
 * embedded registry as the guest reaches it, under the prefix's path. containers-registries.conf(5)
 * (containers/image docs/containers-registries.conf.5.md, f28c9038): a mirror's `location` is prefix-rooted, so
 * `quay.io/ns/os@sha256:…` is tried at `10.0.2.2:PORT/ns/os@sha256:…` first, and only by digest. This is the table
 * the MCO renders from an ImageContentSourcePolicy (machine-config-operator
 * pkg/controller/container-runtime-config/helpers.go updateRegistriesConfig, f8b4f4f2, through openshift/runtime-utils
 * pkg/registries/registries.go EditRegistriesConfig, 4d56ff60: `MirrorByDigestOnly = true` for every mirror set).
 */
import { UsageError } from '../core/errors.js';
import type { Fragment } from './fragment.js';

export interface MirrorPrefix {
  /** `host[:port]/path`, what guests keep in their pullspecs. */
  prefix: string;
  /** The prefix's path without the host: where the embedded registry holds the content. */
  path: string;
}

export const MIRROR_DROP_IN = '/etc/containers/registries.conf.d/50-devpivot-mirror.conf';

// Checked again here (the scenario checks them with positions): the values go into TOML strings unescaped.
const PREFIX = /^[A-Za-z0-9.-]+(?::\d+)?(?:\/[a-z0-9._-]+)+$/;

export function mirrorDropIn(mirrors: readonly MirrorPrefix[], hostPort: string, insecure: boolean): string {
  const lines = [
    '# devpivot mirror mode: digest pulls under these prefixes go to the embedded registry; tags go upstream',
  ];
  for (const { prefix, path } of mirrors) {
    if (!PREFIX.test(prefix) || !prefix.endsWith(`/${path}`) || !/^[a-z0-9._/-]+$/.test(path))
      throw new UsageError(`invalid mirror prefix '${prefix}' (path '${path}')`, undefined, 'IGNITION_MIRROR');
    lines.push(
      '',
      '[[registry]]',
      `prefix = "${prefix}"`,
      `location = "${prefix}"`,
      'mirror-by-digest-only = true',
      '',
      '[[registry.mirror]]',
      `location = "${hostPort}/${path}"`,
      ...(insecure ? ['insecure = true'] : []),
    );
  }
  return `${lines.join('\n')}\n`;
}

export function mirrorFragment(mirrors: readonly MirrorPrefix[], hostPort: string, insecure: boolean): Fragment {
  if (mirrors.length === 0) return { files: [], units: [], users: [] };
  return {
    files: [{ path: MIRROR_DROP_IN, contents: mirrorDropIn(mirrors, hostPort, insecure), mode: 0o644 }],
    units: [],
    users: [],
  };
}
