/**
 * The registry's CA and the node's pull secret as guest files (docs/PROTOCOLS.md "Trust").
 *
 * The CA goes where containers/image looks for a registry's own CA, `/etc/containers/certs.d/HOST:PORT/ca.crt`
 * (containers-certs.d(5); pkg/tlsclientconfig SetupCertificates adds it to the system pool), which is what every
 * driver's guest tool reads: podman (openshift/pivot, the MCD's pulls), skopeo, and skopeo's image proxy under
 * rpm-ostree/ostree-ext and bootc. It also goes into the system trust store RHCOS keeps,
 * `/etc/pki/ca-trust/source/anchors/` (its `coreos-update-ca-trust.service` runs update-ca-trust at boot when the
 * directory is not empty), for any other TLS client there. The Debian-based fixture's stand-ins pull with real
 * skopeo, so certs.d is what they read as well; Debian's own store (`update-ca-certificates`) is not written.
 *
 * The pull secret goes to every path the driver's tool reads (drivers/*.ts `pullSecretPaths`), mode 0600.
 */
import type { FileNode, Fragment } from './fragment.js';

export const SYSTEM_ANCHOR = '/etc/pki/ca-trust/source/anchors/devpivot-registry-ca.crt';

export function caFiles(hostPort: string, caPem: string): FileNode[] {
  const contents = caPem.endsWith('\n') ? caPem : `${caPem}\n`;
  return [
    { path: `/etc/containers/certs.d/${hostPort}/ca.crt`, contents, mode: 0o644 },
    { path: SYSTEM_ANCHOR, contents, mode: 0o644 },
  ];
}

/** `fragment` with the pull secret at `paths`, replacing a file the driver wrote there (the mcd driver's `{}`). */
export function withPullSecret(fragment: Fragment, paths: readonly string[], secret: string): Fragment {
  return {
    ...fragment,
    files: [
      ...fragment.files.filter((file) => !paths.includes(file.path)),
      ...paths.map((path) => ({ path, contents: secret, mode: 0o600 })),
    ],
  };
}
