/**
 * Test helper: Debian's docker-registry (distribution 2.8) on 127.0.0.1 with a free port and a temp storage
 * dir, optionally behind htpasswd Basic auth or Bearer token auth. Started and stopped by pid.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLoopbackPort } from '../../src/core/free-port.js';
import type { ImageManifest } from '../../src/oci/manifest.js';
import { RegistryClient } from '../../src/oscontainer/index.js';

export interface DockerRegistry {
  hostPort: string;
  storage: string;
  stop(): Promise<void>;
}

export const TEST_USER = 'devpivot';
export const TEST_PASSWORD = 'pivot-secret';
/** bcrypt (cost 4) of TEST_PASSWORD, made once with Python's crypt module: distribution accepts only bcrypt. */
export const TEST_BCRYPT = '$2b$04$JQkbHQn3IOFbubr8ukhmvevQbaQ2etC4PE9z9ozUemm8AD5wPdcZW';

export interface RegistryAuth {
  htpasswd?: boolean;
  /** Token auth: realm URL, service name, issuer and the PEM certificate bundle that signs tokens. */
  token?: { realm: string; service: string; issuer: string; rootCertPem: string };
}

async function waitUp(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`docker-registry exited: ${log()}`);
    try {
      const response = await fetch(url);
      await response.body?.cancel();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`docker-registry did not start: ${log()}`);
}

export async function startDockerRegistry(auth: RegistryAuth = {}): Promise<DockerRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-dreg-'));
  const port = await freeLoopbackPort();
  const lines = [
    'version: 0.1',
    'log: {level: error}',
    `storage: {filesystem: {rootdirectory: ${join(dir, 'data')}}, delete: {enabled: true}}`,
    `http: {addr: "127.0.0.1:${port}"}`,
  ];
  if (auth.htpasswd) {
    await writeFile(join(dir, 'htpasswd'), `${TEST_USER}:${TEST_BCRYPT}\n`);
    lines.push(`auth: {htpasswd: {realm: devpivot-test, path: ${join(dir, 'htpasswd')}}}`);
  } else if (auth.token) {
    await writeFile(join(dir, 'token-ca.pem'), auth.token.rootCertPem);
    lines.push(
      `auth: {token: {realm: "${auth.token.realm}", service: "${auth.token.service}", ` +
        `issuer: "${auth.token.issuer}", rootcertbundle: ${join(dir, 'token-ca.pem')}}}`,
    );
  }
  await writeFile(join(dir, 'config.yml'), `${lines.join('\n')}\n`);
  // Through a small shell that stops the registry when our end of its stdin closes: even when the test
  // process is killed (an ava timeout), no registry is left running.
  const child = spawn(
    'sh',
    ['-c', '/usr/bin/docker-registry serve "$0" & reg=$!; read -r _; kill $reg; wait $reg', join(dir, 'config.yml')],
    { stdio: ['pipe', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  await waitUp(`http://127.0.0.1:${port}/v2/`, child, () => stderr);
  return {
    hostPort: `127.0.0.1:${port}`,
    storage: dir,
    async stop() {
      if (child.exitCode === null) {
        const closed = new Promise((resolve) => child.once('close', resolve));
        child.stdin!.end();
        await closed;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The image manifest of `repository@digest` in a registry on this host, and its blobs (config, then layers). */
export async function imageBlobs(
  hostPort: string,
  repository: string,
  digest: string,
): Promise<{ manifest: ImageManifest; blobs: string[] }> {
  const fetched = await new RegistryClient(hostPort).getManifest(repository, digest);
  const manifest = JSON.parse(fetched.bytes.toString('utf8')) as ImageManifest;
  return { manifest, blobs: [manifest.config.digest, ...manifest.layers.map((layer) => layer.digest)] };
}
