/**
 * The guest network under the shared system daemon (qemu:///system: QEMU runs as libvirt-qemu, with libvirt's
 * default seccomp sandbox): a guest reaches the allowed port of the host's loopback (several connections at once,
 * as skopeo opens them) and the ssh forward reaches the guest, while another loopback port and UDP are refused;
 * with nobody serving the filter the guest reaches nothing. Traffic stays on 127.0.0.1: the test never makes a
 * guest try an address outside this host. Guest: net-guest.ts.
 */
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Server } from 'node:net';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';
import { freeLoopbackPort } from '../../src/core/free-port.js';
import { GuestFilter, guestFilterDir } from '../../src/vm/guest-filter.js';
import type { NodeSpec } from '../../src/vm/index.js';
import { openHost } from '../../src/vm/libvirt/index.js';
import { tempDir } from '../helpers/temp.js';
import { buildNetGuest } from './net-guest.js';

const URI = 'qemu:///system';
const guest = buildNetGuest();

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  );
}

function netNode(name: string, script: string, network: NodeSpec['network']): NodeSpec {
  return {
    name,
    image: guest.baseImage,
    ignition: script,
    memoryMiB: 256,
    vcpus: 1,
    firmware: 'bios',
    kernel: { path: guest.kernel, initrd: guest.initrd, cmdline: guest.cmdline },
    network,
  };
}

/** The guest's `net-guest:` lines until `net-guest: done` (or the deadline). */
function guestLines(bus: EventBus, node: string, timeoutMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    const timer = setTimeout(() => {
      dispose();
      reject(new Error(`the guest did not finish within ${timeoutMs} ms:\n${lines.join('\n')}`));
    }, timeoutMs);
    const dispose = bus.subscribe((event: Stamped) => {
      if (event.kind !== 'vm.console' || event.node !== node || !event.line.includes('net-guest:')) return;
      lines.push(event.line.slice(event.line.indexOf('net-guest:')));
      if (event.line.includes('net-guest: done')) {
        clearTimeout(timer);
        dispose();
        resolve(lines);
      }
    });
  });
}

/** Read the first line the guest's port 22 sends through the forward on 127.0.0.1, then send one back. */
function sshBanner(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.setEncoding('utf8');
    socket.setTimeout(15_000, () => socket.destroy(new Error('no banner within 15 s')));
    socket.on('data', (chunk: string) => {
      data += chunk;
      if (data.includes('\n')) {
        socket.end('thanks\n');
        resolve(data.split('\n')[0]!);
      }
    });
    socket.on('error', reject);
  });
}

test('a guest reaches the registry port and its ssh forward, nothing else on the host; no filter, no network', async (t) => {
  const registryConnections: number[] = [];
  const registry = createHttpServer((request, response) => {
    // answer slowly, so the guest's three requests are open at the same time
    setTimeout(() => response.end(`blob ${request.url}\n`), 300);
  });
  registry.on('connection', () => registryConnections.push(Date.now()));
  const registryPort = await listen(registry);
  let otherConnections = 0;
  const other = createServer((socket) => {
    otherConnections += 1;
    socket.end('you should not see this\n');
  });
  const otherPort = await listen(other);
  const udp = createSocket('udp4');
  let datagrams = 0;
  udp.on('message', () => datagrams++);
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
  const udpPort = udp.address().port;

  const sessionId = `test-vm-net-${randomBytes(3).toString('hex')}`;
  const bus = new EventBus();
  const host = await openHost({ uri: URI, sessionId, bus, stateDir: tempDir('devpivot-net-') });
  const blocked: string[] = [];
  const filter = await GuestFilter.start({
    dir: guestFilterDir(sessionId),
    policy: { hostTcpPorts: [registryPort] },
    onBlocked: (what) => blocked.push(what),
  });
  try {
    const sshPort = await freeLoopbackPort();
    const script = [
      'B=/bin/busybox',
      `for i in 1 2 3; do ( $B timeout 30 $B wget -q -O - http://10.0.2.2:${registryPort}/blob$i | $B sed "s/^/net-guest: registry $i: /" ) & done`,
      'wait',
      's=$($B date +%s)',
      `if $B timeout 20 $B wget -O - http://10.0.2.2:${otherPort}/ >/tmp/o 2>&1; then r=reached; else r=refused; fi`,
      'echo "net-guest: other port: $r after $(( $($B date +%s) - s ))s: $($B tail -n 1 /tmp/o)"',
      // busybox nc has no UDP; tftp sends its read request as a datagram to HOST PORT
      `$B timeout 5 $B tftp -g -r datagram -l /tmp/t 10.0.2.2 ${udpPort} >/dev/null 2>&1`,
      'echo "net-guest: udp sent"',
      // wait for the host to have read the banner through the forward (banner writes /tmp/ssh-done)
      'i=0; while [ ! -e /tmp/ssh-done ] && [ $i -lt 300 ]; do $B sleep 0.2; i=$((i+1)); done',
    ].join('\n');
    const node = await host.createNode(netNode('n1', script, { sshPort, filter: filter.sockets }));
    const finished = guestLines(bus, 'n1', 240_000);
    const up = new Promise<void>((resolve) => {
      const dispose = bus.subscribe((event: Stamped) => {
        if (event.kind === 'vm.console' && event.node === 'n1' && event.line.includes('net-guest: udp sent')) {
          dispose();
          resolve();
        }
      });
    });
    await node.start();
    await up;
    t.is(await sshBanner(sshPort), 'SSH-2.0-net-guest', 'the forward on 127.0.0.1 reaches the guest port 22');
    const lines = await finished;
    for (const i of [1, 2, 3]) t.true(lines.includes(`net-guest: registry ${i}: blob /blob${i}`), lines.join('\n'));
    t.true(registryConnections.length >= 3, 'the requests came as separate connections');
    t.true(
      lines.some((line) => /other port: refused after [0-5]s: .*[Cc]onnection refused/.test(line)),
      `the other port is refused at once (the filter answers with a reset):\n${lines.join('\n')}`,
    );
    t.is(otherConnections, 0, 'nothing reached the other loopback port');
    t.is(datagrams, 0, 'no UDP reached the host');
    t.true(blocked.includes(`tcp 10.0.2.2:${otherPort}`), blocked.join(', '));
    t.true(blocked.includes(`udp 10.0.2.2:${udpPort}`), blocked.join(', '));
    t.true(filter.stats.passed > 0);
    await node.destroy();

    // Fail closed: the same node with nobody listening on its filter sockets reaches nothing.
    await filter.close();
    const before = registryConnections.length;
    const closedScript = [
      'B=/bin/busybox',
      `if $B timeout 15 $B wget -q -O - http://10.0.2.2:${registryPort}/x >/dev/null 2>&1; then r=reached; else r=unreachable; fi`,
      'echo "net-guest: without filter: $r"',
    ].join('\n');
    const closed = await host.createNode(netNode('n2', closedScript, { filter: filter.sockets }));
    const closedLines = guestLines(bus, 'n2', 180_000);
    await closed.start();
    t.true((await closedLines).includes('net-guest: without filter: unreachable'));
    t.is(registryConnections.length, before, 'the registry saw no connection from the unfiltered guest');
  } finally {
    await filter.close();
    rmSync(guestFilterDir(sessionId), { recursive: true, force: true });
    await host.destroyAll();
    await host.close();
    registry.close();
    other.close();
    udp.close();
  }
});
