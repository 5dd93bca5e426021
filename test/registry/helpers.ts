import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';
import { caFetch } from '../../src/oscontainer/transport/ca-fetch.js';
import { newCredentials, pullSecret, type RegistryCredentials } from '../../src/registry/auth.js';
import { type RunningRegistry, type StartRegistryOptions, startRegistry } from '../../src/registry/server.js';
import { registryTls } from '../../src/registry/tls.js';
import { tempDir as removedAfterTheFile } from '../helpers/temp.js';

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
export const DOCKER_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json';
export const OCI_LAYER_GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';
export const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';

export function digestOf(bytes: Uint8Array | string): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** A directory removed after the test file's last test (../helpers/temp.ts). */
export async function tempDir(prefix = 'devpivot-registry-test-'): Promise<string> {
  return removedAfterTheFile(prefix);
}

export interface TestRegistry {
  registry: RunningRegistry;
  url: string;
  host: string;
  bus: EventBus;
  events: Stamped[];
  storage: string;
  /** `secure`: the CA (ca.crt) in a directory skopeo's and podman's `--cert-dir` take, and a pull secret file. */
  secure?: { caFile: string; certDir: string; authFile: string; credentials: RegistryCredentials };
  close(): Promise<void>;
}

/**
 * A real registry on 127.0.0.1:0 over a fresh temp storage, recording every event. `secure`: HTTPS with a CA
 * made for the test (registry/tls.ts) and Basic credentials required (registry/auth.ts); other options (limits)
 * pass to startRegistry.
 */
export async function startTestRegistry(
  options: Omit<StartRegistryOptions, 'storage' | 'bus' | 'tls' | 'auth'> & { secure?: boolean } = {},
): Promise<TestRegistry> {
  const { secure: wantSecure, ...rest } = options;
  const storage = await tempDir();
  const bus = new EventBus();
  const events: Stamped[] = [];
  bus.subscribe((event) => events.push(event));
  const trustDir = join(storage, '..', `${storage.split('/').pop()}-trust`);
  const tls = wantSecure ? await registryTls(join(trustDir, 'certs')) : undefined;
  const credentials = wantSecure ? newCredentials() : undefined;
  const registry = await startRegistry({
    ...rest,
    storage,
    bus,
    ...(tls ? { tls } : {}),
    ...(credentials ? { auth: credentials } : {}),
  });
  let secure: TestRegistry['secure'];
  if (tls && credentials) {
    const authFile = join(trustDir, 'auth.json');
    await writeFile(authFile, pullSecret(credentials, [registry.address]), { mode: 0o600 });
    secure = { caFile: tls.caFile, certDir: join(trustDir, 'certs'), authFile, credentials };
  }
  return {
    registry,
    url: registry.url,
    host: registry.address,
    bus,
    events,
    storage,
    ...(secure ? { secure } : {}),
    async close() {
      await registry.stop();
      await rm(storage, { recursive: true, force: true });
      await rm(trustDir, { recursive: true, force: true });
    },
  };
}

/** What `curl` (below) adds to every call: the CA and the credentials of a secure test registry. */
let curlDefaults: string[] = [];

/**
 * Make this test process's clients those of a secure registry: global fetch verifies its certificate with its
 * CA and sends its credentials as Basic auth (unless a request sets its own Authorization), and `curl` gets
 * `--cacert` and `-u`. Each test file runs in its own process, so only the file that calls this is affected.
 */
export function useSecureClients(r: TestRegistry): void {
  const secure = r.secure;
  if (!secure) throw new Error('useSecureClients needs startTestRegistry({ secure: true })');
  const { username, password } = secure.credentials;
  const basic = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const viaCa = caFetch(readFileSync(secure.caFile, 'utf8'));
  globalThis.fetch = ((input: string | URL, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has('authorization')) headers.set('authorization', basic);
    return viaCa(input, { ...init, headers });
  }) as typeof fetch;
  curlDefaults = ['--cacert', secure.caFile, '-u', `${username}:${password}`];
}

export interface Blob {
  digest: string;
  size: number;
  bytes: Buffer;
  mediaType: string;
}

function blob(bytes: Buffer, mediaType: string): Blob {
  return { digest: digestOf(bytes), size: bytes.length, bytes, mediaType };
}

/** A gzip layer of random bytes (random so digests never collide between tests; gzip so skopeo keeps it as-is). */
export function randomLayer(size: number): { layer: Blob; diffId: string } {
  const raw = randomBytes(size);
  return { layer: blob(gzipSync(raw, { level: 1 }), OCI_LAYER_GZIP), diffId: digestOf(raw) };
}

export interface Image {
  config: Blob;
  layers: Blob[];
  manifest: Blob;
}

export function makeImage(
  layerSizes: number[],
  options: { arch?: string; mediaType?: string; labels?: Record<string, string> } = {},
): Image {
  const built = layerSizes.map((size) => randomLayer(size));
  const docker = options.mediaType === DOCKER_MANIFEST;
  const layers = built.map(({ layer }) =>
    docker ? { ...layer, mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip' } : layer,
  );
  const config = blob(
    Buffer.from(
      JSON.stringify({
        architecture: options.arch ?? 'amd64',
        os: 'linux',
        config: { Labels: options.labels ?? {}, Entrypoint: ['/noentry'] },
        rootfs: { type: 'layers', diff_ids: built.map((b) => b.diffId) },
      }),
    ),
    docker ? 'application/vnd.docker.container.image.v1+json' : OCI_CONFIG,
  );
  const descriptor = (b: Blob) => ({ mediaType: b.mediaType, digest: b.digest, size: b.size });
  const manifestType = options.mediaType ?? OCI_MANIFEST;
  const manifest = blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: manifestType,
        config: descriptor(config),
        layers: layers.map(descriptor),
      }),
    ),
    manifestType,
  );
  return { config, layers, manifest };
}

export function makeIndex(images: { image: Image; arch: string }[], mediaType = OCI_INDEX): Blob {
  return blob(
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType,
        manifests: images.map(({ image, arch }) => ({
          mediaType: image.manifest.mediaType,
          digest: image.manifest.digest,
          size: image.manifest.size,
          platform: { architecture: arch, os: 'linux' },
        })),
      }),
    ),
    mediaType,
  );
}

/** Write an OCI image layout holding `top` (a manifest or an index) under `tag`, with every blob given. */
export async function writeOciLayout(dir: string, top: Blob, blobs: Blob[], tag = 'latest'): Promise<void> {
  await mkdir(join(dir, 'blobs', 'sha256'), { recursive: true });
  await writeFile(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  for (const b of [top, ...blobs]) await writeFile(join(dir, 'blobs', 'sha256', b.digest.slice(7)), b.bytes);
  await writeFile(
    join(dir, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_INDEX,
      manifests: [
        {
          mediaType: top.mediaType,
          digest: top.digest,
          size: top.size,
          annotations: { 'org.opencontainers.image.ref.name': tag },
        },
      ],
    }),
  );
}

export interface ProcResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run a real program (skopeo, curl); never throws on a non-zero exit. */
export function run(file: string, args: string[], timeoutMs = 60_000): Promise<ProcResult> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 64 << 20, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** curl -s -i: status, lower-cased headers, body. */
export async function curl(
  args: string[],
): Promise<{ status: number; headers: Record<string, string>; body: string; raw: string }> {
  const result = await run('curl', ['-s', '-i', ...curlDefaults, ...args]);
  if (result.code !== 0) throw new Error(`curl ${args.join(' ')} failed: ${result.stderr}`);
  // Skip interim responses (100 Continue).
  const blocks = result.stdout.split('\r\n\r\n');
  let index = 0;
  while (/^HTTP\/\S+ 1\d\d/.test(blocks[index] ?? '') && index < blocks.length - 1) index++;
  const head = blocks[index] ?? '';
  const body = blocks.slice(index + 1).join('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine?.split(' ')[1]), headers, body, raw: result.stdout };
}

/** Upload a blob monolithically (POST ?digest=) through HTTP. */
export async function pushBlob(url: string, repo: string, b: Blob): Promise<Response> {
  return fetch(`${url}/v2/${repo}/blobs/uploads/?digest=${b.digest}`, {
    method: 'POST',
    body: b.bytes,
    headers: { 'Content-Type': 'application/octet-stream' },
  });
}

export async function pushManifest(url: string, repo: string, reference: string, m: Blob): Promise<Response> {
  return fetch(`${url}/v2/${repo}/manifests/${reference}`, {
    method: 'PUT',
    body: m.bytes,
    headers: { 'Content-Type': m.mediaType },
  });
}

/** Push an image's blobs and its manifest under `reference`. */
export async function pushImage(url: string, repo: string, image: Image, reference = 'latest'): Promise<void> {
  for (const b of [image.config, ...image.layers]) {
    const response = await pushBlob(url, repo, b);
    if (response.status !== 201) throw new Error(`blob push ${response.status}: ${await response.text()}`);
  }
  const response = await pushManifest(url, repo, reference, image.manifest);
  if (response.status !== 201) throw new Error(`manifest push ${response.status}: ${await response.text()}`);
}

export async function errorCodes(response: Response): Promise<string[]> {
  const body = (await response.json()) as { errors: { code: string }[] };
  return body.errors.map((e) => e.code);
}
