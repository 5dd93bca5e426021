/**
 * The guest network with the real fixture and the real CLI: the pivot's pull from the registry works through
 * devpivot's filter while the guest's attempt to reach another port of the host's loopback fails, and the run
 * names what was blocked. Nothing leaves 127.0.0.1.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { tempDir } from '../helpers/temp.js';
import { leftoverDomains, runScenarioCli } from './run-scenario.js';

test('a node pulls from the registry but cannot reach another port of the host loopback', async (t) => {
  t.timeout(25 * 60_000);
  let connections = 0;
  const other = createServer((socket) => {
    connections += 1;
    socket.end('HTTP/1.0 200 OK\r\n\r\nreached\n');
  });
  const port = await new Promise<number>((resolve) =>
    other.listen(0, '127.0.0.1', () => resolve((other.address() as { port: number }).port)),
  );
  const file = join(tempDir('devpivot-net-e2e-'), 'guest-network.yaml');
  writeFileSync(
    file,
    `name: guest-network
nodes:
  node1: { pivot: fixture:2 }
steps:
  - up
  - expect: { booted: fixture:2, within: 10m }
  - ssh: { run: "busybox nc -w 5 10.0.2.2 ${port} </dev/null 2>&1; echo rc=$?", expect: 'rc=[1-9]', within: 3m }
`,
  );
  try {
    const run = await runScenarioCli('guest-network', { file });
    t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
    t.is(connections, 0, 'nothing reached the other loopback port');
    const blocked = run.events.filter(
      (e) =>
        e.kind === 'log' &&
        e.message === `node node1 tried to reach tcp 10.0.2.2:${port}: blocked (guests reach only the registry)`,
    );
    t.is(blocked.length, 1, 'the run names the blocked destination once');
    t.true(
      run.events.some((e) => e.kind === 'blob.progress' && e.sent === e.total && e.total > 1_000_000),
      'the layer was pulled through the filter',
    );
    t.deepEqual(leftoverDomains('guest-network'), []);
  } finally {
    other.close();
  }
});
