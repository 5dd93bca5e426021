import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import type { RegistryCredentials } from './auth.js';
import type { RegistryFaults } from './blob-stream.js';
import { createRegistry, type RegistryListener } from './handler.js';
import type { RegistryLimits } from './limits.js';
import type { PullThroughOptions } from './pull-through/pull-through.js';
import { markServing } from './storage/serving.js';
import { RegistryStore, type StoreOptions } from './store.js';
import type { RegistryTls } from './tls.js';

export interface StartRegistryOptions extends StoreOptions {
  /** Default 127.0.0.1: devpivot never exposes its registry beyond loopback unless told to. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** Storage directory (created when missing). */
  storage: string;
  bus?: EventBus;
  faults?: RegistryFaults;
  /** Pull-through: fill misses from an upstream (pull-through/pull-through.ts). */
  pullThrough?: PullThroughOptions;
  /** Limits on every port (limits.ts); unset fields take the defaults. */
  limits?: Partial<RegistryLimits>;
  /** Serve HTTPS on every port with this certificate (tls.ts `registryTls`); plain HTTP when omitted. */
  tls?: RegistryTls;
  /** Require these credentials (HTTP Basic, auth.ts) on every request of every port. */
  auth?: RegistryCredentials;
}

export interface RunningRegistry {
  /** `http://host:port`, or `https://` with `tls` (no trailing slash). Stable across stop()/start(). */
  readonly url: string;
  /** The CA clients must trust (PEM), with `tls`. */
  readonly caPem: string | undefined;
  /** The credentials it requires, with `auth`. */
  readonly auth: RegistryCredentials | undefined;
  readonly host: string;
  readonly port: number;
  /** Host:port as image references spell it, e.g. `127.0.0.1:5000/devpivot/os@sha256:...`. */
  readonly address: string;
  readonly store: RegistryStore;
  /** Live fault settings: mutate to inject (see RegistryFaults). */
  readonly faults: RegistryFaults;
  readonly listener: RegistryListener;
  readonly listening: boolean;
  /** The extra ports of `addNodePort`, by node. */
  readonly nodePorts: ReadonlyMap<string, number>;
  /**
   * Serve the registry on one more port of `host`, whose every request is `node`'s: its `registry.request` and
   * `blob.progress` events carry `node` (the guests of user-mode networking all come from 127.0.0.1, so the port
   * is what tells them apart). Same handler, store and faults as the main port; `stop()`/`start()` take it down
   * and up with the main one. `port` 0 (the default): any free port. Returns the port; the same again for a node
   * that has one.
   */
  addNodePort(node: string, port?: number): Promise<number>;
  /** Close the listener and drop live connections (an outage as clients see it). Idempotent. */
  stop(): Promise<void>;
  /** Listen again on the same host and port. Idempotent. */
  start(): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(
        new DevpivotError('REGISTRY_LISTEN', `cannot listen on ${host}:${port}: ${error.message}`, {
          hint:
            error.code === 'EADDRINUSE'
              ? `another process uses port ${port}: pick another with --port, or --port 0 for any free port`
              : 'check the --host address',
          cause: error,
        }),
      );
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/** Open the store, start listening, emit `registry.listening`. */
export async function startRegistry(options: StartRegistryOptions): Promise<RunningRegistry> {
  const host = options.host ?? '127.0.0.1';
  const store = await RegistryStore.open(options.storage, options);
  const listener = createRegistry({
    store,
    bus: options.bus,
    faults: options.faults,
    ...(options.pullThrough ? { pullThrough: options.pullThrough } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.auth ? { auth: options.auth } : {}),
  });
  const { limiter } = listener;
  const tls = options.tls;
  // Every port, plain or HTTPS, takes the limits' timeouts and is counted and guarded by the limiter.
  const makeServer = (handler: RequestListener): Server =>
    limiter.guard(
      tls
        ? (createHttpsServer(
            { ...limiter.serverOptions(), key: tls.keyPem, cert: tls.certPem },
            handler,
          ) as unknown as Server)
        : createServer(limiter.serverOptions(), handler),
    );
  let server: Server | undefined;
  let port = options.port ?? 0;
  /** The node ports: a server while listening, and the port to listen on again after stop(). */
  const nodes = new Map<string, { port: number; server: Server | undefined }>();
  const listenNode = async (node: string, entry: { port: number; server: Server | undefined }) => {
    const next = makeServer(listener.forNode(node));
    await listen(next, entry.port, host);
    entry.server = next;
    entry.port = (next.address() as AddressInfo).port;
  };
  const close = (current: Server) =>
    new Promise<void>((resolve) => {
      current.close(() => resolve());
      current.closeAllConnections();
    });
  // Sessions idle for uploadTtlMs are removed periodically while listening, not only at start.
  let expiry: NodeJS.Timeout | undefined;
  let unmark: () => Promise<void> = async () => {};

  const urlHost = host.includes(':') ? `[${host}]` : host;
  const registry = {
    get url() {
      return `${tls ? 'https' : 'http'}://${urlHost}:${port}`;
    },
    caPem: tls?.caPem,
    auth: options.auth,
    host,
    get port() {
      return port;
    },
    get address() {
      return `${urlHost}:${port}`;
    },
    store,
    faults: listener.faults,
    listener,
    get listening() {
      return server !== undefined;
    },
    get nodePorts() {
      return new Map([...nodes].map(([node, entry]) => [node, entry.port]));
    },
    async addNodePort(node: string, nodePort = 0) {
      const known = nodes.get(node);
      if (known) return known.port;
      const entry = { port: nodePort, server: undefined as Server | undefined };
      // Listening now when the registry listens, else at the next start() (port 0 is then chosen there).
      if (server) await listenNode(node, entry);
      if (nodes.has(node)) {
        // Another call for this node got there first while this one listened.
        if (entry.server) await close(entry.server);
        return nodes.get(node)!.port;
      }
      nodes.set(node, entry);
      return entry.port;
    },
    async start() {
      if (server) return;
      const next = makeServer(listener);
      await listen(next, port, host);
      port = (next.address() as AddressInfo).port;
      try {
        for (const [node, entry] of nodes) if (!entry.server) await listenNode(node, entry);
      } catch (error) {
        for (const entry of nodes.values()) {
          if (entry.server) await close(entry.server);
          entry.server = undefined;
        }
        await close(next);
        throw error;
      }
      server = next;
      unmark = await markServing(store.root);
      expiry = setInterval(() => void store.expireUploads().catch(() => {}), Math.min(store.uploadTtlMs, 3_600_000));
      expiry.unref();
      options.bus?.emit({
        kind: 'registry.listening',
        url: registry.url,
        storage: options.storage,
        ...(tls ? { ca: tls.caFile } : {}),
      });
    },
    async stop() {
      const current = server;
      if (!current) return;
      server = undefined;
      clearInterval(expiry);
      const closing = [close(current)];
      for (const entry of nodes.values()) {
        if (entry.server) closing.push(close(entry.server));
        entry.server = undefined;
      }
      await Promise.all(closing);
      await unmark();
      options.bus?.emit({ kind: 'registry.stopped', url: registry.url });
    },
  };
  await registry.start();
  return registry;
}
