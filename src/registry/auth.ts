/**
 * Credentials the embedded registry requires (`registry: { auth: true }`, `registry serve --auth`): HTTP Basic on
 * every request of every port, `/v2/` included, as distribution's htpasswd access controller does (a 401 with
 * `WWW-Authenticate: Basic realm=…` and the spec's UNAUTHORIZED error). Basic, not distribution's token flow: every
 * client devpivot drives answers a Basic challenge with the pull secret's `auth` — containers/image (podman,
 * skopeo, and through skopeo's image proxy rpm-ostree/ostree-ext and bootc; docker/docker_client.go
 * `setupRequestAuth`), curl `-u`, and devpivot's own transport (oscontainer/transport/authenticator.ts).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { RegistryError } from './errors.js';

export interface RegistryCredentials {
  username: string;
  password: string;
}

export const AUTH_REALM = 'devpivot registry';

/** A fresh user and password for one run's registry. */
export function newCredentials(): RegistryCredentials {
  return { username: 'devpivot', password: randomBytes(18).toString('base64url') };
}

/** `{"auths": {HOST: {"auth": base64(user:password)}}}`: the pull secret format (containers-auth.json(5)). */
export function pullSecret(credentials: RegistryCredentials, hosts: readonly string[]): string {
  const auth = Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64');
  return `${JSON.stringify({ auths: Object.fromEntries(hosts.map((host) => [host, { auth }])) }, null, 2)}\n`;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Throws the 401 UNAUTHORIZED (with its challenge) unless `req` carries `credentials` as Basic auth. */
export function requireBasic(req: IncomingMessage, credentials: RegistryCredentials): void {
  const header = req.headers.authorization ?? '';
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match) {
    const text = Buffer.from(match[1]!, 'base64').toString('utf8');
    const colon = text.indexOf(':');
    if (
      colon >= 0 &&
      same(text.slice(0, colon), credentials.username) &&
      same(text.slice(colon + 1), credentials.password)
    )
      return;
  }
  // containers/image sends `Basic Og==` (an empty user and password) when it has no credentials: none, not wrong.
  const sent = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : ':';
  throw new RegistryError(
    401,
    'UNAUTHORIZED',
    sent === ':' ? 'authentication required' : 'authentication required: wrong user or password',
    undefined,
    { 'WWW-Authenticate': `Basic realm="${AUTH_REALM}"` },
  );
}
