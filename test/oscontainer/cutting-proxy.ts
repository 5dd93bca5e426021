/**
 * Test helper: a loopback TCP proxy that breaks ONE response mid-body: the first response to a request whose
 * request line matches `match` is cut after `cutAfter` bytes. Records every request head it forwards.
 */
import { connect, createServer, type Server } from 'node:net';

export interface CuttingProxy {
  hostPort: string;
  requests: string[];
  cuts: number;
  stop(): Promise<void>;
}

export async function startCuttingProxy(upstream: string, match: RegExp, cutAfter: number): Promise<CuttingProxy> {
  const [host, port] = upstream.split(':');
  const state = { requests: [] as string[], cuts: 0, armed: true };
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer((client) => {
    const remote = connect(Number(port), host!);
    sockets.add(client).add(remote);
    let requestLine = '';
    let forwarded = 0;
    client.on('data', (data) => {
      const text = data.toString('latin1');
      if (/^[A-Z]+ \S+ HTTP\/1\.1\r\n/.test(text)) {
        requestLine = text.slice(0, text.indexOf('\r\n'));
        state.requests.push(text.slice(0, text.indexOf('\r\n\r\n')));
        forwarded = 0;
      }
      remote.write(data);
    });
    remote.on('data', (data) => {
      if (state.armed && match.test(requestLine) && forwarded + data.byteLength > cutAfter) {
        state.armed = false;
        state.cuts++;
        client.write(data.subarray(0, cutAfter - forwarded));
        client.destroy();
        remote.destroy();
        return;
      }
      forwarded += data.byteLength;
      client.write(data);
    });
    client.on('error', () => remote.destroy());
    remote.on('error', () => client.destroy());
    client.on('close', () => remote.destroy());
    remote.on('close', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as { port: number };
  return {
    hostPort: `127.0.0.1:${own}`,
    get requests() {
      return state.requests;
    },
    get cuts() {
      return state.cuts;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
