/**
 * Registries this process was told to trust, by `host:port`: the CA their TLS certificate chains to and the
 * credentials they require. The engine registers the embedded registry it starts with `tls`/`auth` (every port of
 * it), so each client it makes for that address — builds, copies, the MCO image push — speaks HTTPS with that CA
 * and answers its challenge, as skopeo does with `certs.d/HOST:PORT/ca.crt` and an auth file.
 */
import type { Credentials } from './credentials.js';

export interface TrustedRegistry {
  /** PEM of the CA to verify the registry's certificate with: the registry is spoken to over HTTPS. */
  caPem?: string;
  credentials?: Credentials;
}

const trusted = new Map<string, TrustedRegistry>();

/** Trust `addresses` (host:port each) until the returned function is called. */
export function trustRegistry(addresses: readonly string[], trust: TrustedRegistry): () => void {
  for (const address of addresses) trusted.set(address, trust);
  return () => {
    for (const address of addresses) if (trusted.get(address) === trust) trusted.delete(address);
  };
}

export function trustedRegistry(address: string): TrustedRegistry | undefined {
  return trusted.get(address);
}
