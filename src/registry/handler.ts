import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { EventBus } from '../core/bus.js';
import { bareMediaType, isAnyManifestType, MediaType } from '../oci/media-types.js';
import { isRepositoryName } from '../oci/names.js';
import { type RegistryFaults, sendBlob } from './blob-stream.js';
import { parseDigest } from './digest.js';
import { blobUnknown, manifestUnknown, nameUnknown, RegistryError, unsupported } from './errors.js';
import { MAX_MANIFEST_BYTES } from './manifest.js';
import { compareLexical } from './names.js';
import type { RegistryStore } from './store.js';

export interface RegistryOptions {
  store: RegistryStore;
  /** Receives `registry.request` per response and `blob.progress` while blobs are served. */
  bus?: EventBus;
  /** Initial faults; the returned listener's `faults` object is the live one. */
  faults?: RegistryFaults;
}

/** A Node request listener that is also a handle on the live fault settings and the store. */
export type RegistryListener = RequestListener & { faults: RegistryFaults; store: RegistryStore };

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  query: URLSearchParams;
  client: string;
  /** Body bytes sent (for the request log). */
  bytes: number;
}

type Route = { re: RegExp; handler: (ctx: Ctx, name: string, ref: string) => Promise<void> };

const JSON_TYPE = 'application/json; charset=utf-8';

function send(ctx: Ctx, status: number, headers: Record<string, string | number>, body?: string | Buffer): void {
  const { req, res } = ctx;
  const buffer = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body) : body;
  res.statusCode = status;
  for (const [key, value] of Object.entries(headers)) res.setHeader(key, value);
  res.setHeader('Content-Length', buffer?.length ?? 0);
  if (buffer && req.method !== 'HEAD') {
    ctx.bytes += buffer.length;
    res.end(buffer);
  } else res.end();
}

function sendJson(ctx: Ctx, status: number, value: unknown, headers: Record<string, string> = {}): void {
  send(ctx, status, { 'Content-Type': JSON_TYPE, ...headers }, JSON.stringify(value));
}

function sendError(ctx: Ctx, error: RegistryError): void {
  send(ctx, error.status, { 'Content-Type': JSON_TYPE, ...error.headers }, error.body());
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new RegistryError(413, 'SIZE_INVALID', `body larger than ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new RegistryError(413, 'SIZE_INVALID', `body larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function contentLength(req: IncomingMessage): number | undefined {
  const value = req.headers['content-length'];
  return value === undefined ? undefined : Number(value);
}

/** `n` and `last` pagination shared by tags/list and _catalog, with an RFC 5988 `Link` to the next page. */
function paginate(ctx: Ctx, items: string[], path: string): { page: string[]; headers: Record<string, string> } {
  const sorted = [...items].sort(compareLexical);
  const last = ctx.query.get('last');
  const rawN = ctx.query.get('n');
  let start = 0;
  if (last !== null) {
    start = sorted.findIndex((item) => compareLexical(item, last) > 0);
    if (start < 0) start = sorted.length;
  }
  if (rawN === null) return { page: sorted.slice(start), headers: {} };
  if (!/^\d+$/.test(rawN)) throw new RegistryError(400, 'UNSUPPORTED', `invalid page size n='${rawN}'`);
  const n = Number(rawN);
  const page = sorted.slice(start, start + n);
  const headers: Record<string, string> = {};
  if (n > 0 && start + n < sorted.length) {
    const next = new URLSearchParams({ n: String(n), last: page[page.length - 1]! });
    headers.Link = `<${path}?${next}>; rel="next"`;
  }
  return { page, headers };
}

/** Parse a single `Range: bytes=a-b` (RFC 9110 §14.1.2). Multi-range and malformed headers are ignored (200). */
function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (match[2] !== '' && Number(match[2]) < start) return undefined; // invalid: ignore per RFC
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

/** Spec "Pulling manifests": honour Accept only when it names manifest types and none of them is stored. */
function acceptable(acceptHeader: string | undefined, mediaType: string): boolean {
  if (!acceptHeader) return true;
  const types = acceptHeader.split(',').map((part) => bareMediaType(part));
  if (types.includes('*/*') || types.includes(mediaType)) return true;
  return !types.some((type) => isAnyManifestType(type));
}

/**
 * The OCI distribution API (v1.1) as a Node request listener. Routes and fixed error values follow
 * go-containerregistry's pkg/registry; behaviour follows the spec's four workflow categories.
 */
export function createRegistry(options: RegistryOptions): RegistryListener {
  const { store, bus } = options;
  const faults: RegistryFaults = options.faults ?? {};

  const uploadHeaders = (name: string, id: string, size: number) => ({
    Location: `/v2/${name}/blobs/uploads/${id}`,
    Range: `0-${Math.max(0, size - 1)}`,
    'Docker-Upload-UUID': id,
  });

  async function blobGet(ctx: Ctx, name: string, ref: string): Promise<void> {
    const digest = parseDigest(ref);
    if (!(await store.repositories.blobInRepo(name, digest))) throw blobUnknown(digest);
    const opened = await store.blobs.open(digest);
    if (!opened) throw blobUnknown(digest);
    const { handle, size } = opened;
    try {
      const base = {
        'Content-Type': 'application/octet-stream',
        'Docker-Content-Digest': digest,
        ETag: `"${digest}"`,
        'Accept-Ranges': 'bytes',
        'Cache-Control': 'max-age=31536000',
      };
      const range = parseRange(ctx.req.headers.range, size);
      if (range === 'unsatisfiable') {
        throw new RegistryError(
          416,
          // No spec code names ranges; SIZE_INVALID ("length did not match content length") is the closest.
          'SIZE_INVALID',
          `range not satisfiable: blob has ${size} bytes`,
          { size },
          {
            'Content-Range': `bytes */${size}`,
          },
        );
      }
      const start = range?.start ?? 0;
      const end = range?.end ?? size - 1;
      const length = size === 0 ? 0 : end - start + 1;
      ctx.res.statusCode = range ? 206 : 200;
      for (const [key, value] of Object.entries(base)) ctx.res.setHeader(key, value);
      ctx.res.setHeader('Content-Length', length);
      if (range) ctx.res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
      if (ctx.req.method === 'HEAD' || length === 0) {
        ctx.res.end();
        return;
      }
      const corrupt = faults.corruptBlobs === true && (await store.repositories.isLayer(name, digest));
      ctx.bytes = await sendBlob(handle, start, length, ctx.res, {
        faults,
        corrupt,
        onProgress: (sent) => {
          ctx.bytes = sent;
          bus?.emit({ kind: 'blob.progress', repository: name, digest, sent, total: length, client: ctx.client });
        },
      });
    } finally {
      await handle.close();
    }
  }

  async function blobDelete(ctx: Ctx, name: string, ref: string): Promise<void> {
    const digest = parseDigest(ref);
    if (!(await store.repositories.unlinkBlob(name, digest))) throw blobUnknown(digest);
    send(ctx, 202, {});
  }

  async function uploadStart(ctx: Ctx, name: string): Promise<void> {
    const mount = ctx.query.get('mount');
    if (mount !== null) {
      const digest = parseDigest(mount);
      const from = ctx.query.get('from');
      // Spec: `from` MAY be treated as optional; without it we mount any blob the store holds.
      const source =
        from !== null && isRepositoryName(from)
          ? await store.repositories.blobInRepo(from, digest)
          : await store.blobs.stat(digest);
      if (source) {
        await store.repositories.linkBlob(name, digest);
        send(ctx, 201, { Location: `/v2/${name}/blobs/${digest}`, 'Docker-Content-Digest': digest });
        return;
      }
    }
    const digestParam = ctx.query.get('digest');
    if (digestParam !== null) {
      const digest = parseDigest(digestParam);
      const info = await store.blobs.put(ctx.req, digest, contentLength(ctx.req));
      await store.repositories.linkBlob(name, info.digest);
      send(ctx, 201, { Location: `/v2/${name}/blobs/${info.digest}`, 'Docker-Content-Digest': info.digest });
      return;
    }
    const id = await store.uploads.create(name);
    send(ctx, 202, uploadHeaders(name, id, 0));
  }

  function chunkRange(ctx: Ctx): { start: number; length: number | undefined } | undefined {
    const header = ctx.req.headers['content-range'];
    const length = contentLength(ctx.req);
    if (header === undefined) return undefined;
    const match = /^(?:bytes )?(\d+)-(\d+)(?:\/(?:\d+|\*))?$/.exec(header.trim());
    if (!match) throw new RegistryError(416, 'BLOB_UPLOAD_INVALID', `malformed Content-Range '${header}'`);
    const start = Number(match[1]);
    const end = Number(match[2]);
    if (end < start || (length !== undefined && end - start + 1 !== length))
      throw new RegistryError(416, 'BLOB_UPLOAD_INVALID', `Content-Range '${header}' does not match the body length`);
    return { start, length: end - start + 1 };
  }

  async function uploadPatch(ctx: Ctx, name: string, id: string): Promise<void> {
    const range = chunkRange(ctx);
    const size = await store.uploads.append(name, id, ctx.req, range?.start, range?.length ?? contentLength(ctx.req));
    send(ctx, 202, uploadHeaders(name, id, size));
  }

  async function uploadPut(ctx: Ctx, name: string, id: string): Promise<void> {
    const digestParam = ctx.query.get('digest');
    const digest = parseDigest(digestParam);
    const range = chunkRange(ctx);
    if (range) await store.uploads.append(name, id, ctx.req, range.start, range.length);
    const length = contentLength(ctx.req);
    const hasBody = !range && (length === undefined ? ctx.req.headers['transfer-encoding'] !== undefined : length > 0);
    const info = await store.uploads.complete(name, id, digest, hasBody ? ctx.req : undefined, length);
    send(ctx, 201, { Location: `/v2/${name}/blobs/${info.digest}`, 'Docker-Content-Digest': info.digest });
  }

  async function uploadStatus(ctx: Ctx, name: string, id: string): Promise<void> {
    send(ctx, 204, uploadHeaders(name, id, await store.uploads.size(name, id)));
  }

  async function uploadCancel(ctx: Ctx, name: string, id: string): Promise<void> {
    await store.uploads.cancel(name, id);
    send(ctx, 204, {});
  }

  async function manifestGet(ctx: Ctx, name: string, ref: string): Promise<void> {
    if (ref.includes(':')) parseDigest(ref);
    const manifest = await store.repositories.getManifest(name, ref);
    if (!manifest) throw (await store.repositories.hasRepository(name)) ? manifestUnknown(ref) : nameUnknown(name);
    if (!acceptable(ctx.req.headers.accept, manifest.mediaType))
      throw new RegistryError(404, 'MANIFEST_UNKNOWN', `manifest is a ${manifest.mediaType}, not an accepted type`, {
        mediaType: manifest.mediaType,
      });
    send(
      ctx,
      200,
      { 'Content-Type': manifest.mediaType, 'Docker-Content-Digest': manifest.digest, ETag: `"${manifest.digest}"` },
      manifest.bytes,
    );
  }

  async function manifestPut(ctx: Ctx, name: string, ref: string): Promise<void> {
    const body = await readBody(ctx.req, MAX_MANIFEST_BYTES);
    const result = await store.repositories.putManifest(name, ref, body, ctx.req.headers['content-type']);
    const headers: Record<string, string> = {
      Location: `/v2/${name}/manifests/${result.digest}`,
      'Docker-Content-Digest': result.digest,
    };
    if (result.subject) headers['OCI-Subject'] = result.subject;
    send(ctx, 201, headers);
  }

  async function manifestDelete(ctx: Ctx, name: string, ref: string): Promise<void> {
    if (!(await store.repositories.hasRepository(name))) throw nameUnknown(name);
    await store.repositories.deleteManifest(name, ref);
    send(ctx, 202, {});
  }

  async function tagsList(ctx: Ctx, name: string): Promise<void> {
    if (!(await store.repositories.hasRepository(name))) throw nameUnknown(name);
    const { page, headers } = paginate(ctx, await store.repositories.listTags(name), `/v2/${name}/tags/list`);
    sendJson(ctx, 200, { name, tags: page }, headers);
  }

  async function referrers(ctx: Ctx, name: string, ref: string): Promise<void> {
    const digest = parseDigest(ref);
    let list = await store.repositories.referrers.list(name, digest);
    const headers: Record<string, string> = { 'Content-Type': MediaType.ociIndex };
    const artifactType = ctx.query.get('artifactType');
    if (artifactType !== null) {
      list = list.filter((d) => d.artifactType === artifactType);
      headers['OCI-Filters-Applied'] = 'artifactType';
    }
    send(ctx, 200, headers, JSON.stringify({ schemaVersion: 2, mediaType: MediaType.ociIndex, manifests: list }));
  }

  const byMethod = (
    handlers: Partial<Record<string, (ctx: Ctx, name: string, ref: string) => Promise<void>>>,
  ): Route['handler'] => {
    return async (ctx, name, ref) => {
      const method = ctx.req.method === 'HEAD' && !handlers.HEAD ? 'GET' : (ctx.req.method ?? 'GET');
      const handler = handlers[method];
      if (!handler) throw unsupported(`method ${ctx.req.method} not allowed here`);
      await handler(ctx, name, ref);
    };
  };

  // Order matters: names may themselves contain "blobs" or "manifests" components, so suffixes are matched last.
  const routes: Route[] = [
    { re: /^\/v2\/(.+)\/blobs\/uploads\/?$/, handler: byMethod({ POST: uploadStart }) },
    {
      re: /^\/v2\/(.+)\/blobs\/uploads\/([^/]+)$/,
      handler: byMethod({ PATCH: uploadPatch, PUT: uploadPut, GET: uploadStatus, DELETE: uploadCancel }),
    },
    { re: /^\/v2\/(.+)\/blobs\/([^/]+)$/, handler: byMethod({ GET: blobGet, DELETE: blobDelete }) },
    {
      re: /^\/v2\/(.+)\/manifests\/([^/]+)$/,
      handler: byMethod({ GET: manifestGet, PUT: manifestPut, DELETE: manifestDelete }),
    },
    { re: /^\/v2\/(.+)\/tags\/list$/, handler: byMethod({ GET: tagsList }) },
    { re: /^\/v2\/(.+)\/referrers\/([^/]+)$/, handler: byMethod({ GET: referrers }) },
  ];

  async function handle(ctx: Ctx): Promise<void> {
    const rawUrl = ctx.req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
    ctx.query = new URLSearchParams(q < 0 ? '' : rawUrl.slice(q + 1));
    if (path === '/v2' || path === '/v2/') {
      if (ctx.req.method !== 'GET' && ctx.req.method !== 'HEAD') throw unsupported('only GET and HEAD on /v2/');
      return sendJson(ctx, 200, {});
    }
    if (path === '/v2/_catalog') {
      if (ctx.req.method !== 'GET') throw unsupported('only GET on /v2/_catalog');
      const { page, headers } = paginate(ctx, await store.repositories.listRepositories(), '/v2/_catalog');
      return sendJson(ctx, 200, { repositories: page }, headers);
    }
    for (const route of routes) {
      const match = route.re.exec(path);
      if (!match) continue;
      const name = match[1]!;
      if (!isRepositoryName(name))
        throw new RegistryError(400, 'NAME_INVALID', `invalid repository name '${name}'`, { name });
      let ref = match[2] ?? '';
      try {
        ref = decodeURIComponent(ref);
      } catch {
        throw new RegistryError(400, 'UNSUPPORTED', `malformed reference '${ref}'`);
      }
      return route.handler(ctx, name, ref);
    }
    throw new RegistryError(404, 'UNSUPPORTED', `no such endpoint: ${ctx.req.method} ${path}`);
  }

  const listener = ((req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const ctx: Ctx = {
      req,
      res,
      query: new URLSearchParams(),
      client: `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? 0}`,
      bytes: 0,
    };
    res.setHeader('Docker-Distribution-API-Version', 'registry/2.0');
    res.on('close', () => {
      bus?.emit({
        kind: 'registry.request',
        method: req.method ?? '?',
        path: req.url ?? '/',
        status: res.statusCode,
        bytes: ctx.bytes,
        ms: Math.round(performance.now() - started),
        client: ctx.client,
      });
    });
    handle(ctx).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy(error instanceof Error ? error : undefined);
        return;
      }
      if (error instanceof RegistryError) return sendError(ctx, error);
      // A client that went away mid-upload is not a server error; anything else is.
      const aborted = req.destroyed || (error as NodeJS.ErrnoException).code === 'ECONNRESET';
      if (aborted) return res.destroy();
      sendError(ctx, new RegistryError(500, 'UNSUPPORTED', `internal error: ${(error as Error).message}`));
    });
  }) as RegistryListener;
  listener.faults = faults;
  listener.store = store;
  return listener;
}
