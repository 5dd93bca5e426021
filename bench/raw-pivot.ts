/**
 * The floor of `bench:pivot` (issue 15 item 5): the same pivot without devpivot in the path. A static file registry
 * (node:http on 127.0.0.1 serving the oscontainer devpivot pushed, read-only from the files of its registry store),
 * the Ignition devpivot generates (its library, pointed at this registry), an overlay of the same base volume
 * (qemu-img), and a domain of the same XML shape (src/vm/domain-xml.ts) defined and started with virsh; timed from
 * the harness's start to the boot report of v2 in the serial log (the `devpivot-report:` line the classifier
 * reads). Network: libvirt's plain `<interface type='user'>`, without devpivot's guest filter — the filter runs in
 * devpivot's process and is part of the overhead this floor exists to show; the fixture guest talks only to
 * 10.0.2.2:PORT (the e2e tests check the filter blocks nothing else), so it sends nothing elsewhere either way.
 * Everything it makes is named for this process and removed by exact name, also on failure and Ctrl-C.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stateDir } from '../src/core/paths.js';
import { loadFixture } from '../src/fixture/fixture.js';
import { generateIgnition } from '../src/ignition/index.js';
import { probeAccel } from '../src/vm/accel.js';
import { baseVolumeName, domainXml, fwCfgMethod } from '../src/vm/domain-xml.js';
import { digestCacheFile, imageDigest, inspectQcow2 } from '../src/vm/qcow2.js';

const run = promisify(execFile);
const URI = 'qemu:///system';
const virsh = (...args: string[]) => run('virsh', ['-c', URI, ...args], { encoding: 'utf8' });

/** What the harness pivots to: the oscontainer devpivot pushed (`image.pushed`'s `host:port/repo@digest`). */
export interface RawTarget {
  repository: string;
  digest: string;
}

export interface RawResult {
  ok: boolean;
  /** Harness start to the v2 boot report, seconds. */
  bootedV2S: number;
  /** GETs the static registry answered (manifest + blobs). */
  requests: string[];
  error?: string;
}

/** The blob file of a digest in devpivot's registry store (src/registry/storage/layout.ts). */
function blobPath(store: string, digest: string): string {
  const hex = digest.slice('sha256:'.length);
  return join(store, 'blobs', 'sha256', hex.slice(0, 2), hex);
}

/**
 * The OCI distribution reads a pull by digest needs, and nothing more: GET /v2/, then GET/HEAD of the one
 * manifest (by its digest) and of the blobs it names. Read-only; anything else is a 404.
 */
export async function startStaticRegistry(store: string, target: RawTarget, requests: string[]): Promise<Server> {
  const manifest = await readFile(blobPath(store, target.digest));
  const mediaType = (JSON.parse(manifest.toString('utf8')) as { mediaType?: string }).mediaType;
  if (!mediaType) throw new Error(`manifest ${target.digest} names no mediaType`);
  const parsed = JSON.parse(manifest.toString('utf8')) as { config: { digest: string }; layers: { digest: string }[] };
  const blobs = new Set([parsed.config.digest, ...parsed.layers.map((layer) => layer.digest)]);
  const prefix = `/v2/${target.repository}/`;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0]!;
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) return void res.writeHead(405).end();
    requests.push(`${req.method} ${path}`);
    if (path === '/v2/' || path === '/v2') {
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(head ? undefined : '{}');
    }
    if (path === `${prefix}manifests/${target.digest}`) {
      res.writeHead(200, {
        'content-type': mediaType,
        'content-length': manifest.byteLength,
        'docker-content-digest': target.digest,
      });
      return void res.end(head ? undefined : manifest);
    }
    const digest = path.startsWith(`${prefix}blobs/`) ? path.slice(prefix.length + 'blobs/'.length) : '';
    if (!blobs.has(digest)) return void res.writeHead(404).end();
    void (async () => {
      const file = await open(blobPath(store, digest));
      try {
        const { size } = await file.stat();
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': size,
          'docker-content-digest': digest,
        });
        if (head) return void res.end();
        await new Promise<void>((resolve, reject) =>
          file
            .createReadStream({ autoClose: false, highWaterMark: 1 << 20 })
            .on('error', reject)
            .pipe(res)
            .on('close', resolve),
        );
      } finally {
        await file.close();
      }
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  return server;
}

/** Resolves when the console log holds the boot report of version 2 (polls: virtlogd appends to the file). */
async function waitForV2(log: string, signal: AbortSignal): Promise<void> {
  for (;;) {
    signal.throwIfAborted();
    const text = existsSync(log) ? await readFile(log, 'utf8') : '';
    for (const line of text.split('\n')) {
      const at = line.indexOf('devpivot-report: ');
      if (at < 0) continue;
      try {
        const report = JSON.parse(line.slice(at + 'devpivot-report: '.length).trim()) as {
          event?: string;
          version?: string;
        };
        if (report.event === 'booted' && report.version === '2') return;
      } catch {
        // A line cut by the poll: read again next time.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Names this process made, for cleanup by exact name. */
export class RawHarness {
  readonly name = `devpivot-bench-raw-${process.pid}`;
  #dir: string | undefined;
  #server: Server | undefined;
  #defined = false;

  async run(target: RawTarget, timeoutMs: number): Promise<RawResult> {
    const requests: string[] = [];
    const started = Date.now();
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      this.#server = await startStaticRegistry(join(stateDir(), 'registry'), target, requests);
      const port = (this.#server.address() as AddressInfo).port;
      // Same base as devpivot's node: the fixture's v1 disk, as the base volume devpivot uploaded to its pool.
      const fixture = await loadFixture();
      const sha = await imageDigest(await inspectQcow2(fixture.disk), digestCacheFile(stateDir()));
      const base = (await virsh('vol-path', '--pool', 'devpivot', baseVolumeName(sha))).stdout.trim();
      this.#dir = await mkdtemp(join(tmpdir(), `${this.name}-`));
      await chmod(this.#dir, 0o755);
      const disk = join(this.#dir, 'disk.qcow2');
      const { virtualSize } = await inspectQcow2(base);
      await run('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', base, '-F', 'qcow2', disk, String(virtualSize)]);
      const hostPort = `10.0.2.2:${port}`;
      const ignition = join(this.#dir, 'config.ign');
      const config = generateIgnition({
        driver: 'legacy',
        image: `${hostPort}/${target.repository}@${target.digest}`,
        registry: { hostPort, insecure: true },
      });
      await writeFile(ignition, JSON.stringify(config), { mode: 0o644 });
      const consoleLog = join(this.#dir, 'console.log');
      const libVersion = /libvirt (\d+)\.(\d+)\.(\d+)/.exec((await virsh('version')).stdout);
      const version = libVersion
        ? Number(libVersion[1]) * 1e6 + Number(libVersion[2]) * 1e3 + Number(libVersion[3])
        : 0;
      const xml = domainXml({
        name: this.name,
        metadata: { session: 'bench-raw', node: 'node1', image: 'fixture:1', created: '', volumes: [], base },
        // devpivot's own choice (a KVM boot probe): /dev/kvm existing is not enough (an MSR abort on this host).
        domainType: (await probeAccel()).domainType,
        memoryMiB: 1024,
        vcpus: 1,
        firmware: 'bios',
        disk,
        ignition: { path: ignition, method: fwCfgMethod(version) },
        consoleLog,
      })
        // Without devpivot's metadata element: nothing of devpivot's ever takes this domain for one of its own.
        .replace(/ {2}<metadata>[\s\S]*?<\/metadata>\n/, '');
      const xmlFile = join(this.#dir, 'domain.xml');
      await writeFile(xmlFile, xml);
      await virsh('define', xmlFile);
      this.#defined = true;
      await virsh('start', this.name);
      await waitForV2(consoleLog, signal);
      return { ok: true, bootedV2S: (Date.now() - started) / 1000, requests };
    } catch (error) {
      return { ok: false, bootedV2S: Number.NaN, requests, error: (error as Error).message };
    } finally {
      await this.cleanup();
    }
  }

  /** Removes the domain, its files and the server, by exact name; safe to call twice. */
  async cleanup(): Promise<void> {
    if (this.#defined) {
      await virsh('destroy', this.name).catch(() => undefined);
      await virsh('undefine', this.name).catch(() => undefined);
      this.#defined = false;
    }
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections());
    const dir = this.#dir;
    this.#dir = undefined;
    if (dir && (await stat(dir).catch(() => undefined))) await rm(dir, { recursive: true, force: true });
  }
}
