import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 nobody listens on now, for a server started next (QEMU's ssh forward, a test's
 * registry). Another process could take it in between; callers that bind it themselves should listen on 0.
 */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no loopback port')),
      );
    });
  });
}
