import type { IncomingMessage, ServerResponse } from 'node:http';
import type { EventBus } from '../../core/bus.js';
import type { RegistryFaults } from '../blob-stream.js';
import { RegistryError } from '../errors.js';
import type { Limiter } from '../limits.js';
import type { PullThrough } from '../pull-through/pull-through.js';
import type { BlobPool } from '../storage/blob-pool.js';
import type { RepositoryIndex } from '../storage/repository-index.js';
import type { UploadSessions } from '../storage/upload-sessions.js';

/** What a handler is given: the request, its response, and the storage pieces, bus and faults it may use. */
export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  query: URLSearchParams;
  /** `address:port` of the client, as events name it. */
  client: string;
  /**
   * The node that made the request: set when it came in on that node's own port (server.ts `addNodePort`);
   * undefined on the main port (devpivot itself, external clients).
   */
  node?: string;
  /** Body bytes sent (for the request log). */
  bytes: number;
  /** The body length promised for a blob GET, and whether its content was corrupted (fault accounting). */
  length?: number;
  corrupted?: boolean;
  blobs: BlobPool;
  repositories: RepositoryIndex;
  uploads: UploadSessions;
  bus: EventBus | undefined;
  faults: RegistryFaults;
  /** Set when the registry fills misses from an upstream (pull-through/pull-through.ts). */
  pullThrough?: PullThrough | undefined;
  /** The registry's limits: checks before a body is read, and the body itself (limits.ts). */
  limiter: Limiter;
}

/** A handler of one method on one route: `name` is the validated repository name, `ref` the decoded reference. */
export type Handler = (ctx: RequestContext, name: string, ref: string) => Promise<void>;

const JSON_TYPE = 'application/json; charset=utf-8';

/** Send a whole response (no body for HEAD, with the Content-Length a GET would have). */
export function send(
  ctx: RequestContext,
  status: number,
  headers: Record<string, string | number>,
  body?: string | Buffer,
): void {
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

export function sendJson(ctx: RequestContext, status: number, value: unknown, headers: Record<string, string> = {}) {
  send(ctx, status, { 'Content-Type': JSON_TYPE, ...headers }, JSON.stringify(value));
}

/** The one writer of error responses: the spec's `{"errors": [...]}` body with the error's status and headers. */
export function sendError(ctx: RequestContext, error: RegistryError): void {
  send(ctx, error.status, { 'Content-Type': JSON_TYPE, ...error.headers }, error.body());
}

/** A small request body (a manifest) in memory; over `limit` bytes is 413 SIZE_INVALID. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new RegistryError(413, 'SIZE_INVALID', `body larger than ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  // Stopping early leaves the request alive, so the 413 is still answered on its connection.
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new RegistryError(413, 'SIZE_INVALID', `body larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function contentLength(req: IncomingMessage): number | undefined {
  const value = req.headers['content-length'];
  return value === undefined ? undefined : Number(value);
}
