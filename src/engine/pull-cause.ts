/**
 * Why a guest's pull failed, from the TLS or HTTP client's own words (docs/PROTOCOLS.md "Trust"): a certificate
 * the guest does not trust, or credentials the registry refused. The classifier puts it before a failure's reason,
 * `pull failed: TLS (…): …` or `pull failed: registry credentials refused (…): …`, quoting the client.
 *
 * The words: Go's crypto/x509 (containers/image under podman, skopeo, rpm-ostree's and bootc's image proxy)
 * `x509: certificate signed by unknown authority`, `x509: certificate is valid for …, not …`, `tls: failed to
 * verify certificate: …` (Go ≥ 1.20 wraps the x509 error so); OpenSSL via curl `SSL certificate problem: …`.
 * A 401: containers/image's `unauthorized: authentication required` (docker/errors.go and the registry's
 * UNAUTHORIZED error body), the bare `…: unauthorized` that Debian's skopeo 1.9 prints for an anonymous manifest
 * fetch refused with that body (`reading manifest … in HOST/REPO: unauthorized`, seen on this project's host),
 * `requested access to the resource is denied`, or the bare status.
 */
export type PullCause = { kind: 'tls' | 'auth'; detail: string };

const TLS = /((?:tls: failed to verify certificate: )?x509: [^"]+?|SSL certificate problem: [^"]+?)(?=[")\n]| \(|$|; )/;
const AUTH =
  /(unauthorized: [^"]+?|(?<=: )unauthorized|authentication required|requested access to the resource is denied|\b401 Unauthorized\b)(?=[")\n]| \(|$|; )/i;

export function pullCause(text: string): PullCause | undefined {
  const tls = TLS.exec(text);
  if (tls) return { kind: 'tls', detail: tls[1]!.trim() };
  const auth = AUTH.exec(text);
  if (auth) return { kind: 'auth', detail: auth[1]!.trim() };
  return undefined;
}

/** The reason prefix for a failure with that cause. */
export function pullCauseReason(cause: PullCause): string {
  return cause.kind === 'tls'
    ? `pull failed: TLS (${cause.detail})`
    : `pull failed: registry credentials refused (${cause.detail})`;
}
