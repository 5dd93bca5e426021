/**
 * Answers a registry's 401 challenge with an Authorization header: Basic from the user's credentials, or a
 * Bearer token from the challenge's realm (token server) for the scopes the request needs, sending the
 * credentials when there are any (docker's token authentication; go-containerregistry
 * pkg/v1/remote/transport/bearer.go is the model). Credentials are looked up once, on first need.
 */
import { type Challenge, parseChallenge } from './challenge.js';
import { type Credentials, findCredentials } from './credentials.js';
import { authFailed } from './errors.js';

export type Fetch = (url: string, init: RequestInit) => Promise<Response>;

export class Authenticator {
  #credentials: Credentials | null | undefined;
  /** Set once the registry asked for Basic: then one header serves every scope. */
  basic = false;

  constructor(
    private readonly registry: string,
    credentials: Credentials | null | undefined,
    private readonly env: NodeJS.ProcessEnv,
    private readonly fetch: Fetch,
  ) {
    this.#credentials = credentials;
  }

  async #credentialsFor(repository: string): Promise<Credentials | null> {
    if (this.#credentials === undefined) this.#credentials = await findCredentials(this.registry, repository, this.env);
    return this.#credentials;
  }

  /** The Authorization header answering `header` (a WWW-Authenticate value) for `scopes`. */
  async answer(header: string, scopes: string[], repository: string): Promise<string> {
    const challenge: Challenge = parseChallenge(header);
    const credentials = await this.#credentialsFor(repository);
    const basic = credentials
      ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`
      : undefined;
    if (challenge.scheme === 'basic') {
      if (!basic) throw authFailed(this.registry, repository, 'the registry requires a user name and password');
      this.basic = true;
      return basic;
    }
    if (challenge.scheme !== 'bearer' || !challenge.params.realm) {
      throw authFailed(this.registry, repository, `unsupported authentication challenge '${challenge.scheme}'`);
    }
    const url = new URL(challenge.params.realm);
    if (challenge.params.service) url.searchParams.set('service', challenge.params.service);
    for (const scope of scopes) url.searchParams.append('scope', scope);
    const response = await this.fetch(url.toString(), { headers: basic ? { authorization: basic } : {} });
    if (!response.ok) {
      await response.body?.cancel();
      throw authFailed(this.registry, repository, `the token server ${url.origin} answered ${response.status}`);
    }
    const body = (await response.json()) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (!token) throw authFailed(this.registry, repository, `the token server ${url.origin} sent no token`);
    return `Bearer ${token}`;
  }
}
