import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { EventBus } from '../core/bus.js';
import { type RegistryCredentials, requireBasic } from './auth.js';
import type { RegistryFaults } from './blob-stream.js';
import { RegistryError, unsupported } from './errors.js';
import { type RequestContext, sendError } from './handlers/context.js';
import { Limiter, type RegistryLimits } from './limits.js';
import { PullThrough, type PullThroughOptions } from './pull-through/pull-through.js';
import { dispatch } from './routes.js';
import type { RegistryStore } from './store.js';

export interface RegistryOptions {
  store: RegistryStore;
  /**
   * Receives one `registry.request` per response (when it closes) and `blob.progress` while blobs are served
   * (its contract: handlers/blobs.ts `handleBlobGet`).
   */
  bus?: EventBus;
  /** Initial faults; the returned listener's `faults` object is the live one. */
  faults?: RegistryFaults;
  /** Fill misses (blobs, manifests by digest) from this upstream (pull-through/pull-through.ts). */
  pullThrough?: PullThroughOptions;
  /** Limits on every port (limits.ts); unset fields take the defaults. */
  limits?: Partial<RegistryLimits>;
  /** Require these credentials on every request (auth.ts). */
  auth?: RegistryCredentials;
}

/** A Node request listener that is also a handle on the live fault settings and the store. */
export type RegistryListener = RequestListener & {
  faults: RegistryFaults;
  store: RegistryStore;
  pullThrough: PullThrough | undefined;
  /** The limits every port applies; server.ts guards each port's server with it. */
  limiter: Limiter;
  /**
   * The same registry (same store, faults, bus and pull-through) as a listener whose every request is made by
   * `node`: its events carry `node` (server.ts `addNodePort` serves it on a port of the node's own).
   */
  forNode(node: string): RequestListener;
};

/**
 * The OCI distribution API (v1.1) as a Node request listener: the route table (routes.ts) picks a handler by
 * resource and method; handlers throw fixed RegistryError values and this listener is their one writer.
 * Structure after go-containerregistry's pkg/registry; behaviour follows the spec's four workflow categories.
 */
export function createRegistry(options: RegistryOptions): RegistryListener {
  const { store, bus } = options;
  const faults: RegistryFaults = options.faults ?? {};
  const pullThrough = options.pullThrough ? new PullThrough(store, options.pullThrough, bus) : undefined;
  const limiter = new Limiter(store.root, options.limits);

  const serve = (req: IncomingMessage, res: ServerResponse, node: string | undefined) => {
    const started = performance.now();
    const ctx: RequestContext = {
      req,
      res,
      query: new URLSearchParams(),
      client: `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? 0}`,
      ...(node !== undefined ? { node } : {}),
      bytes: 0,
      blobs: store.blobs,
      repositories: store.repositories,
      uploads: store.uploads,
      bus,
      faults,
      pullThrough,
      limiter,
    };
    res.setHeader('Docker-Distribution-API-Version', 'registry/2.0');
    // Node ports are what guests reach: they pull, never write (no push, delete or upload).
    const readOnly = node !== undefined && req.method !== 'GET' && req.method !== 'HEAD';
    res.on('close', () => {
      bus?.emit({
        kind: 'registry.request',
        method: req.method ?? '?',
        path: req.url ?? '/',
        status: res.statusCode,
        bytes: ctx.bytes,
        ...(ctx.length !== undefined ? { length: ctx.length } : {}),
        ...(ctx.corrupted ? { corrupted: true as const } : {}),
        ms: Math.round(performance.now() - started),
        client: ctx.client,
        ...(node !== undefined ? { node } : {}),
      });
    });
    if (options.auth) {
      try {
        requireBasic(req, options.auth);
      } catch (error) {
        // The body of a refused upload is never read: the connection closes after the answer.
        if (req.method !== 'GET' && req.method !== 'HEAD') res.setHeader('Connection', 'close');
        sendError(ctx, error as RegistryError);
        return;
      }
    }
    if (readOnly) {
      // The body is never read: the connection closes after the answer.
      res.setHeader('Allow', 'GET, HEAD');
      res.setHeader('Connection', 'close');
      sendError(ctx, unsupported(`node ports are read-only: ${req.method} is not allowed`));
      return;
    }
    const handle = async () => {
      limiter.admit();
      await dispatch(ctx);
    };
    handle().catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy(error instanceof Error ? error : undefined);
        return;
      }
      // A client that went away (its socket is gone) cannot be answered; anyone else gets the error body, a
      // crash included. (A request is also `destroyed` once its body was read: that is no sign of a client gone.)
      if (req.socket.destroyed) return res.destroy();
      Limiter.linger(req, res);
      if (error instanceof RegistryError) return sendError(ctx, error);
      sendError(ctx, new RegistryError(500, 'UNSUPPORTED', `internal error: ${(error as Error).message}`));
    });
  };
  const listener = ((req: IncomingMessage, res: ServerResponse) => serve(req, res, undefined)) as RegistryListener;
  listener.forNode = (node) => (req, res) => serve(req, res, node);
  listener.faults = faults;
  listener.store = store;
  listener.pullThrough = pullThrough;
  listener.limiter = limiter;
  return listener;
}
