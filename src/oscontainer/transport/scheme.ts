/**
 * Which scheme a registry is spoken to with: plain HTTP for loopback registries (or when told `insecure`),
 * HTTPS for everything else (after go-containerregistry pkg/v1/remote/transport/schemer.go).
 */
export function isLoopback(registry: string): boolean {
  const host = registry.startsWith('[') ? registry.slice(1, registry.indexOf(']')) : registry.split(':')[0]!;
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** `http://host` or `https://host`; Docker Hub's API lives on registry-1.docker.io. */
export function baseUrlOf(registry: string, insecure: boolean | undefined): string {
  const host = registry === 'docker.io' ? 'registry-1.docker.io' : registry;
  return `${insecure || isLoopback(registry) ? 'http' : 'https'}://${host}`;
}
