/**
 * A counting proxy on 127.0.0.1 in front of a pull-through test's upstream (Debian's docker-registry, started by
 * test/oscontainer/docker-registry.ts): it records every request and can slow down or corrupt blob bodies.
 */
import { createServer, request, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface CountingProxy {
  url: string;
  host: string;
  /** `METHOD path` of every request, in order. */
  readonly requests: string[];
  count(method: string, path: string): number;
  /** Paths whose response body gets its first byte flipped. */
  readonly corrupt: Set<string>;
  /** Delay between 64 KiB chunks of blob bodies (ms), to make transfers overlap. */
  throttleMs: number;
  close(): Promise<void>;
}

export async function startCountingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target);
  const requests: string[] = [];
  const corrupt = new Set<string>();
  const proxy: CountingProxy = {
    url: '',
    host: '',
    requests,
    count: (method, path) => requests.filter((r) => r === `${method} ${path}`).length,
    corrupt,
    throttleMs: 0,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push(`${req.method} ${path}`);
    const forward = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path, headers: req.headers },
      async (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        const blob = /\/blobs\/sha256:/.test(path);
        let first = true;
        for await (const chunk of up as AsyncIterable<Buffer>) {
          for (let offset = 0; offset < chunk.length; offset += 64 * 1024) {
            const part = Buffer.from(chunk.subarray(offset, offset + 64 * 1024));
            if (first && corrupt.has(path)) part[0] = (part[0] ?? 0) ^ 0xff;
            first = false;
            if (!res.write(part)) await new Promise((resolve) => res.once('drain', resolve));
            if (blob && proxy.throttleMs > 0) await sleep(proxy.throttleMs);
          }
        }
        res.end();
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  Object.assign(proxy, { url: `http://127.0.0.1:${port}`, host: `127.0.0.1:${port}` });
  return proxy;
}
