import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildFixture, defaultRecipeDir } from '../fixture/fixture.js';
import { generateIgnition } from '../ignition/index.js';
import { parsePlatform } from '../oci/platform.js';
import { builderFingerprint } from '../oscontainer/builder-fingerprint.js';
import {
  buildAndPush,
  buildDerivedImage,
  buildMcoImage,
  copyImage,
  mirrorOscontainer,
  pushMcoImage,
  RegistryClient,
  resolveThroughCache,
  upstreamClient,
} from '../oscontainer/index.js';
import { trustRegistry } from '../oscontainer/transport/trusted.js';
import { newCredentials } from '../registry/auth.js';
import { type RunningRegistry, startRegistry } from '../registry/index.js';
import { makeCa, registryTls } from '../registry/tls.js';
import { openHost } from '../vm/libvirt/index.js';
import type { Deps, PushedImage } from './deps.js';
import { makeHostKeys } from './host-keys.js';
import { underPaths } from './mirror.js';
import { ensureSessionKey } from './ssh.js';

/**
 * The real implementations behind the engine's `Deps` contract: the embedded registry, the oscontainer builder
 * and copier, the Ignition generator, the libvirt host and the fixture OS. The one place the engine's world is
 * wired; everything here is a thin translation of arguments.
 */
export function realDeps(options: { stateDir: string; env?: NodeJS.ProcessEnv }): Deps {
  const env = options.env ?? process.env;
  const buildCache = join(options.stateDir, 'oscontainer-builds.json');
  /** The embedded registry this run started: builds push into its store in process. */
  let embedded: RunningRegistry | undefined;
  return {
    async startRegistry({ host, port, storage, bus, pullThrough, tls, auth }) {
      const material = tls ? await registryTls(tls.dir) : undefined;
      const otherCaPem = tls?.otherCa
        ? await readFile(await makeCa(`${tls.dir}-other`, 'devpivot other CA (not the registry)'), 'utf8')
        : undefined;
      const credentials = auth ? newCredentials() : undefined;
      embedded = await startRegistry({
        host,
        port,
        storage,
        bus,
        ...(material ? { tls: material } : {}),
        ...(credentials ? { auth: credentials } : {}),
        ...(pullThrough
          ? {
              pullThrough: {
                upstream: upstreamClient(pullThrough.upstream, { env }),
                covers: (repository: string) => underPaths(pullThrough.paths, repository),
              },
            }
          : {}),
      });
      if (!material && !credentials) return embedded;
      // This process's own clients (builds, copies, the MCO push) reach every port with the CA and credentials.
      const trust = { ...(material ? { caPem: material.caPem } : {}), ...(credentials ? { credentials } : {}) };
      trustRegistry([embedded.address], trust);
      const registry = embedded;
      return {
        get url() {
          return registry.url;
        },
        get port() {
          return registry.port;
        },
        faults: registry.faults,
        ...(material ? { tls: { caPem: material.caPem, ...(otherCaPem ? { otherCaPem } : {}) } } : {}),
        ...(credentials ? { credentials } : {}),
        stop: () => registry.stop(),
        start: () => registry.start(),
        async addNodePort(node: string) {
          const nodePort = await registry.addNodePort(node);
          trustRegistry([`${registry.host}:${nodePort}`], trust);
          return nodePort;
        },
      };
    },

    async buildOscontainer({
      source,
      format = 'legacy',
      compression,
      layers,
      components,
      registry,
      repository,
      bus,
      signal,
    }) {
      const address = new URL(registry).host;
      const local = embedded?.url === registry ? embedded : undefined;
      // The embedded registry listens on a new port every run but keeps its storage: its entries are keyed
      // 'embedded', not by host:port (which made every run miss, rebuild and push 61 MB again). The builder's
      // fingerprint keeps a changed builder from reusing what an older one recorded.
      const key =
        'repo' in source
          ? `${source.repo}#${source.commit}${format === 'legacy' ? '' : `#${format}`}${compression === 'zstd' ? '#zstd' : ''}${layers ? `#layers=${layers}` : ''}#${builderFingerprint()}`
          : undefined;
      const where = local ? 'embedded' : address;
      // Builds are deterministic: the same commit gives the same digest. Skip the build when the registry still
      // holds the manifest we recorded for it.
      if (key) {
        const cached = (await readCache(buildCache))[`${where}/${repository}|${key}`];
        if (cached && (await hasManifest(address, repository, cached.digest))) {
          bus.emit({ kind: 'image.pushed', ref: `${address}/${repository}@${cached.digest}`, digest: cached.digest });
          return cached;
        }
      }
      const pushed = await buildAndPush({
        ...('repo' in source ? { repo: source.repo, commit: source.commit } : { fromDir: source.rootfs }),
        ...('rootfs' in source && source.version ? { version: source.version } : {}),
        format,
        ...(compression ? { compression } : {}),
        ...(layers !== undefined ? { layers, ...(components ? { components } : {}) } : {}),
        target: `${address}/${repository}:latest`,
        bus,
        signal,
        ...(local ? { store: local.store } : {}),
      });
      const result: PushedImage = {
        digest: pushed.digest,
        commit: pushed.commit,
        version: pushed.version,
        format,
        ...(pushed.layers ? { layers: pushed.layers } : {}),
      };
      if (key) await writeCache(buildCache, `${where}/${repository}|${key}`, result);
      return result;
    },

    async pullOscontainer({ ref, registry, repository, platforms, bus, signal }) {
      // copyImage (inside) emits image.pulled; the labels are read back from our registry.
      const { digest, commit, version, format, instance } = await mirrorOscontainer(
        ref,
        `${new URL(registry).host}/${repository}:latest`,
        { bus, signal, env, ...(platforms ? { platforms: platforms.map((p) => parsePlatform(p)!) } : {}) },
      );
      return { digest, commit, version, format, ...(instance ? { instance } : {}) };
    },

    async buildDerived({ containerfile, context, base, registry, repository, bus, signal }) {
      const image = await buildDerivedImage({
        containerfile,
        context,
        base,
        target: `${new URL(registry).host}/${repository}:latest`,
        bus,
        signal,
        env,
      });
      const { digest, commit, version, format } = image;
      return { digest, commit, version, format };
    },

    async resolveOscontainer({ ref, upstream, registry, repository, layers, bus, signal }) {
      const { digest, commit, version, format } = await resolveThroughCache(
        ref,
        upstream,
        `${new URL(registry).host}/${repository}`,
        { signal, env, layers, bus },
      );
      return { digest, commit, version, format };
    },

    async tagOscontainer({ registry, from, repository, tag, bus, signal }) {
      const host = new URL(registry).host;
      // copyImage emits image.pulled; blobs already in the registry are not sent again.
      await copyImage(`${host}/${from}`, `${host}/${repository}:${tag}`, { bus, signal, env });
    },

    async pushMcoImage({ registry, repository, bus, signal }) {
      signal.throwIfAborted();
      // Small (busybox and a script) and built in memory from fixed values: rebuilt each run, same digest.
      const image = await buildMcoImage({
        standIn: join(defaultRecipeDir(), 'mco', 'machine-config-daemon'),
        busybox: '/bin/busybox',
      });
      const address = new URL(registry).host;
      const digest = await pushMcoImage(image, address, repository);
      bus.emit({ kind: 'image.pushed', ref: `${address}/${repository}@${digest}`, digest });
      return { digest };
    },

    generateIgnition({ driver, image, spec, registry, kernelArgs, sshKeys, hostKeys, extra, mcoImage, healthCheck }) {
      // A scenario's extra config may leave out ignition.version: it is merged into ours, so take ours (the
      // node's spec; 3.0.0, the generator's default, for a request without one).
      const merged =
        extra && !(extra as { ignition?: { version?: unknown } }).ignition?.version
          ? { ...extra, ignition: { ...((extra as { ignition?: object }).ignition ?? {}), version: spec ?? '3.0.0' } }
          : extra;
      // A node without a pivot target gets everything but the update units: the boot report on every node.
      return generateIgnition({
        driver,
        ...(image ? { image } : {}),
        ...(spec ? { spec } : {}),
        registry,
        ...(kernelArgs ? { kernelArgs } : {}),
        ...(sshKeys?.length ? { sshKeys } : {}),
        ...(hostKeys?.length ? { hostKeys } : {}),
        ...(merged ? { extra: merged } : {}),
        ...(mcoImage ? { mcoImage } : {}),
        ...(healthCheck ? { healthCheck } : {}),
      });
    },

    async openHost({ uri, sessionId, bus }) {
      return openHost({
        ...(uri ? { uri } : {}),
        ...(sessionId ? { sessionId } : {}),
        bus,
        stateDir: options.stateDir,
      });
    },

    async loadFixture({ bus, signal }) {
      const { fixture, built } = await buildFixture({
        env,
        signal,
        onLog: (line) => bus.emit({ kind: 'log', level: 'info', source: 'fixture', message: line }),
      });
      if (built)
        bus.emit({ kind: 'log', level: 'info', source: 'fixture', message: `built the fixture OS in ${fixture.dir}` });
      return fixture;
    },

    sessionKey({ stateDir, sessionId }) {
      return ensureSessionKey(stateDir, sessionId);
    },

    hostKeys(tempParent, signal) {
      return makeHostKeys(tempParent, signal);
    },
  };
}

type Cache = Record<string, PushedImage>;

async function readCache(file: string): Promise<Cache> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Cache;
  } catch {
    return {};
  }
}

async function writeCache(file: string, key: string, value: PushedImage): Promise<void> {
  const cache = await readCache(file);
  cache[key] = value;
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(`${file}.tmp`, JSON.stringify(cache, null, 2));
  await rename(`${file}.tmp`, file);
}

async function hasManifest(address: string, repository: string, digest: string): Promise<boolean> {
  try {
    await new RegistryClient(address).getManifest(repository, digest);
    return true;
  } catch {
    return false;
  }
}
