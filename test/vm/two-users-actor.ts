/**
 * One user's side of two-users.vm.test.ts: `node two-users-actor.js URI SESSION STATE IMAGE POOL` defines (never starts)
 * node1 of SESSION on URI as the user running it, and prints its domain and volumes as JSON; a refusal prints the
 * error's code and exits 3.
 */
import { EventBus } from '../../src/core/bus.js';
import { DevpivotError } from '../../src/core/errors.js';
import { openHost } from '../../src/vm/libvirt/host.js';

const [uri, sessionId, stateDir, image, poolPath] = process.argv.slice(2) as [string, string, string, string, string];
try {
  const host = await openHost({ uri, sessionId, stateDir, poolPath, bus: new EventBus(), domainType: 'qemu' });
  const node = await host.createNode({
    name: 'node1',
    image,
    ignition: '{}',
    memoryMiB: 64,
    vcpus: 1,
    firmware: 'bios',
  });
  process.stdout.write(`${JSON.stringify({ domain: node.domain })}\n`);
  await host.close();
} catch (error) {
  process.stdout.write(
    `${JSON.stringify({ code: error instanceof DevpivotError ? error.code : String(error), message: (error as Error).message })}\n`,
  );
  process.exitCode = 3;
}
