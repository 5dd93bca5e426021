/**
 * Test helper: a Docker-style token server (the Bearer flow's realm) signing RS256 JWTs whose x5c certificate
 * docker-registry trusts through its `rootcertbundle`. Checks Basic credentials, grants what is asked.
 */
import { sign } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';

export interface TokenServer {
  realm: string;
  service: string;
  issuer: string;
  certPem: string;
  /** Every scope requested, in order. */
  scopes: string[];
  stop(): Promise<void>;
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export async function startTokenServer(user: string, password: string): Promise<TokenServer> {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-token-'));
  await execa('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=devpivot-test-token',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
  ]);
  const keyPem = await readFile(join(dir, 'key.pem'), 'utf8');
  const certPem = await readFile(join(dir, 'cert.pem'), 'utf8');
  await rm(dir, { recursive: true, force: true });
  const der = certPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const service = 'devpivot-test-registry';
  const issuer = 'devpivot-test-issuer';
  const scopes: string[] = [];
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (request.headers.authorization !== expected) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"details":"bad credentials"}');
      return;
    }
    const requested = url.searchParams.getAll('scope');
    scopes.push(...requested);
    const access = requested.flatMap((scope) => {
      const [type, name, actions] = scope.split(':');
      return type && name && actions ? [{ type, name, actions: actions.split(',') }] : [];
    });
    const now = Math.floor(Date.now() / 1000);
    const header = { typ: 'JWT', alg: 'RS256', x5c: [der] };
    const claims = {
      iss: issuer,
      sub: user,
      aud: url.searchParams.get('service'),
      exp: now + 300,
      nbf: now - 10,
      iat: now,
      jti: String(Math.random()),
      access,
    };
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
    const token = `${input}.${b64url(sign('sha256', Buffer.from(input), keyPem))}`;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token, expires_in: 300 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    realm: `http://127.0.0.1:${port}/token`,
    service,
    issuer,
    certPem,
    scopes,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
