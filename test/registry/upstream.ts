/**
 * An upstream for pull-through tests: Debian's `docker-registry` (distribution) on 127.0.0.1 over a temp dir, and a
 * small counting proxy in front of it that records every request and can slow down or corrupt blob bodies.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const DOCKER_REGISTRY = process.env.DEVPIVOT_DOCKER_REGISTRY ?? '/usr/bin/docker-registry';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface Distribution {
  url: string;
  host: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Start distribution with filesystem storage under `dir`, wait for `/v2/` (with `htpasswd`: Basic auth). */
export async function startDistribution(dir: string, options: { htpasswd?: string } = {}): Promise<Distribution> {
  const port = await freePort();
  const config = join(dir, 'config.yml');
  await writeFile(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: warn',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      'http:',
      `  addr: 127.0.0.1:${port}`,
      ...(options.htpasswd
        ? ['auth:', '  htpasswd:', '    realm: devpivot-test', `    path: ${options.htpasswd}`]
        : []),
      '',
    ].join('\n'),
  );
  const child = spawn(DOCKER_REGISTRY, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`docker-registry exited ${child.exitCode}: ${stderr}`);
    try {
      const status = (await fetch(`${url}/v2/`)).status;
      if (status === 200 || (options.htpasswd && status === 401)) break;
    } catch {}
    if (Date.now() > deadline) throw new Error(`docker-registry did not answer on ${url}: ${stderr}`);
    await sleep(100);
  }
  return {
    url,
    host: `127.0.0.1:${port}`,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.pid === undefined) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(child.pid, 'SIGTERM');
      await exited;
    },
  };
}

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
