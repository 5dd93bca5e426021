/**
 * What every port of the registry refuses (docs/ARCHITECTURE.md "Registry limits"): blobs over a maximum size,
 * more open upload sessions than a cap, a blob that would leave the disk under a free-space reserve, headers or a
 * request body that take too long, and connections over a cap. Every refusal is the distribution error body with
 * its status, and the 100-continue a client waits for is only sent once the checks before the body passed, so a
 * refused upload never sends its body at all.
 */
import { statfs } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { RegistryError } from './errors.js';

export interface RegistryLimits {
  /** The largest blob accepted, in bytes (monolithic or the sum of a session's chunks). */
  maxBlobBytes: number;
  /** Upload sessions open at once (across the store, restarts included). */
  maxUploadSessions: number;
  /** A blob is refused when writing it would leave less than this free on the store's filesystem. */
  minFreeBytes: number;
  /** Time for a request's headers to arrive. */
  headersTimeoutMs: number;
  /** Time for a whole request (headers and body) to arrive; responses (downloads) are not limited. */
  requestTimeoutMs: number;
  /** Open connections over every port of one registry; more are answered 503. */
  maxConnections: number;
}

export const DEFAULT_LIMITS: RegistryLimits = {
  maxBlobBytes: 64 * 1024 ** 3,
  maxUploadSessions: 256,
  minFreeBytes: 256 * 1024 ** 2,
  headersTimeoutMs: 30_000,
  requestTimeoutMs: 3_600_000,
  maxConnections: 256,
};

/** How long a refused upload's connection is still read (and discarded) so the client sees the answer, not a reset. */
const LINGER_MS = 2_000;

const tooLarge = (max: number) =>
  new RegistryError(413, 'SIZE_INVALID', `blob larger than the registry's maximum of ${max} bytes`, { max });

/** The error body as raw HTTP, for answers written on a socket without a response object (timeouts). */
function rawAnswer(status: number, reason: string, error: RegistryError): string {
  const body = error.body();
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

export class Limiter {
  readonly limits: RegistryLimits;
  #connections = 0;
  readonly #continued = new WeakSet<IncomingMessage>();

  constructor(
    private readonly root: string,
    limits: Partial<RegistryLimits> = {},
  ) {
    const merged = { ...DEFAULT_LIMITS, ...limits };
    // Node refuses a headers timeout longer than the request timeout.
    merged.headersTimeoutMs = Math.min(merged.headersTimeoutMs, merged.requestTimeoutMs);
    this.limits = merged;
  }

  /** Options for `createServer` of every port: the timeouts, checked often enough to matter. */
  serverOptions(): ServerOptions {
    const { headersTimeoutMs, requestTimeoutMs } = this.limits;
    return {
      keepAliveTimeout: 30_000,
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(headersTimeoutMs / 4))),
    };
  }

  /** Count the server's connections, answer timeouts with the error body, hold 100-continue for the handler. */
  guard(server: Server): Server {
    server.maxConnections = this.limits.maxConnections * 2; // beyond the soft cap's 503s, connections are dropped
    server.on('connection', (socket: Socket) => {
      this.#connections++;
      socket.once('close', () => this.#connections--);
    });
    server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
      const pending = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
      if (socket.writable && !pending?.headersSent) {
        const timeout = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
        // Headers over Node's limit (16 KiB, --max-http-header-size) are 431 as RFC 6585 names them, not malformed.
        const answer = timeout
          ? rawAnswer(408, 'Request Timeout', new RegistryError(408, 'UNAVAILABLE', 'request not received in time'))
          : error.code === 'HPE_HEADER_OVERFLOW'
            ? rawAnswer(
                431,
                'Request Header Fields Too Large',
                new RegistryError(431, 'UNSUPPORTED', 'request headers larger than the server accepts'),
              )
            : rawAnswer(400, 'Bad Request', new RegistryError(400, 'UNSUPPORTED', `malformed request: ${error.code}`));
        socket.end(answer);
        setTimeout(() => socket.destroy(), LINGER_MS).unref();
        return;
      }
      socket.destroy();
    });
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
    return server;
  }

  /** Before any handler: the connection cap. */
  admit(): void {
    if (this.#connections > this.limits.maxConnections)
      throw new RegistryError(503, 'UNAVAILABLE', `more than ${this.limits.maxConnections} connections`, undefined, {
        'Retry-After': '1',
        Connection: 'close',
      });
  }

  /** Before a new upload session: the cap on open ones (`open` counts them). */
  async admitSession(open: () => Promise<number>): Promise<void> {
    const max = this.limits.maxUploadSessions;
    if ((await open()) >= max)
      throw new RegistryError(429, 'TOOMANYREQUESTS', `${max} upload sessions are open: finish or cancel one`, {
        max,
      });
  }

  /**
   * Before a blob body is read: `held` bytes already in its session plus the `declared` length must fit the
   * maximum, and the filesystem must keep its reserve once they are written.
   */
  async admitBlob(declared: number | undefined, held = 0): Promise<void> {
    const { maxBlobBytes, minFreeBytes } = this.limits;
    if (held + (declared ?? 0) > maxBlobBytes) throw tooLarge(maxBlobBytes);
    const fs = await statfs(this.root);
    const free = fs.bavail * fs.bsize;
    if (free - (declared ?? 0) < minFreeBytes)
      throw new RegistryError(507, 'UNAVAILABLE', `not enough free space for the blob: ${free} bytes free`, {
        free,
        reserve: minFreeBytes,
      });
  }

  /**
   * The request body as chunks, at most `allowed` bytes (then 413): sends the held 100-continue, and never
   * destroys the request when the reader stops early, so an error is still answered on the connection.
   */
  async *body(req: IncomingMessage, res: ServerResponse, allowed: number): AsyncGenerator<Buffer> {
    this.continue(req, res);
    let seen = 0;
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      seen += chunk.length;
      if (seen > allowed) throw tooLarge(this.limits.maxBlobBytes);
      yield chunk;
    }
  }

  /** Send the 100-continue a client waits for (once): call before reading any request body. */
  continue(req: IncomingMessage, res: ServerResponse): void {
    if (this.#continued.has(req) || !/100-continue/i.test(String(req.headers.expect ?? ''))) return;
    this.#continued.add(req);
    res.writeContinue();
  }

  /**
   * An error answered before the body was all read: read (and discard) what the client still sends for a moment,
   * so it reads the answer instead of a reset (closing with unread data makes the kernel send one), then close
   * unless the body ended. The connection stays keep-alive meanwhile: Node would close it at once otherwise.
   */
  static linger(req: IncomingMessage, res: ServerResponse): void {
    if (req.complete) return;
    const socket = req.socket;
    res.once('finish', () => {
      const timer = setTimeout(() => socket.destroy(), LINGER_MS);
      timer.unref();
      req.once('end', () => clearTimeout(timer));
      req.resume();
    });
  }
}
