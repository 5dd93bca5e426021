/**
 * The guest network policy on crafted frames, and the filter's socket protocol against a stand-in for QEMU's
 * filter-redirector (4-byte big-endian length, then the frame). The real QEMU path is guest-network.vm.test.ts.
 */
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { GuestFilter } from '../../src/vm/guest-filter.js';
import { checksum, frameVerdict } from '../../src/vm/guest-network.js';
import { tempDir } from '../helpers/temp.js';
import { ACK, ethernet, GUEST_MAC, ipv4, PSH, qemuSide, SLIRP_MAC, SYN, tcp, udp } from './frames.js';

const policy = { hostTcpPorts: [5000] };

test('allowed: ARP, DHCP to slirp, TCP to the registry port, the guest side of ssh', (t) => {
  t.like(frameVerdict(ethernet(0x0806, Buffer.alloc(28)), policy), { pass: true, why: 'arp' });
  t.like(frameVerdict(udp('255.255.255.255', 67), policy), { pass: true, why: 'dhcp' });
  t.like(frameVerdict(udp('10.0.2.2', 67), policy), { pass: true, why: 'dhcp' });
  t.like(frameVerdict(tcp('10.0.2.2', 40000, 5000, SYN), policy), { pass: true, why: 'host-port' });
  t.like(frameVerdict(tcp('10.0.2.2', 40000, 5000, ACK | PSH, Buffer.from('GET /v2/')), policy), { pass: true });
  t.like(frameVerdict(tcp('10.0.2.2', 22, 45678, SYN | ACK), policy), { pass: true, why: 'ssh' });
  t.like(frameVerdict(tcp('10.0.2.2', 22, 45678, ACK), policy), { pass: true, why: 'ssh' });
});

test('blocked: other host ports, connections opened from port 22, DNS, the outside, ICMP, IPv6, fragments', (t) => {
  t.like(frameVerdict(tcp('10.0.2.2', 40000, 8080, SYN), policy), { pass: false, what: 'tcp 10.0.2.2:8080' });
  t.like(frameVerdict(tcp('10.0.2.2', 22, 8080, SYN), policy), { pass: false, what: 'tcp 10.0.2.2:8080' });
  t.like(frameVerdict(tcp('192.0.2.7', 40000, 5000, SYN), policy), { pass: false, what: 'tcp 192.0.2.7:5000' });
  t.like(frameVerdict(tcp('192.0.2.7', 22, 5000, ACK), policy), { pass: false });
  t.like(frameVerdict(udp('10.0.2.3', 53), policy), { pass: false, what: 'udp 10.0.2.3:53' });
  t.like(frameVerdict(udp('192.0.2.7', 67), policy), { pass: false, what: 'udp 192.0.2.7:67' });
  t.like(frameVerdict(ipv4(1, '10.0.2.2', Buffer.alloc(8)), policy), { pass: false, what: 'icmp 10.0.2.2' });
  t.like(frameVerdict(ethernet(0x86dd, Buffer.alloc(40)), policy), { pass: false, what: 'ipv6' });
  t.like(frameVerdict(ethernet(0x8100, Buffer.alloc(40)), policy), { pass: false, what: 'ethertype 0x8100' });
  const fragment = ipv4(6, '10.0.2.2', Buffer.alloc(20), 0x0010);
  t.like(frameVerdict(fragment, policy), { pass: false, what: 'a fragmented packet to 10.0.2.2' });
  t.like(frameVerdict(Buffer.alloc(10), policy), { pass: false, what: 'a runt frame' });
  t.like(frameVerdict(ethernet(0x0800, Buffer.alloc(10)), policy), { pass: false });
  t.is(
    (frameVerdict(tcp('10.0.2.2', 40000, 8080, ACK), policy) as { reply?: Buffer }).reply,
    undefined,
    'only a connection request gets a reset',
  );
});

test('a refused connection request is answered with a valid RST+ACK back to the guest', (t) => {
  const verdict = frameVerdict(tcp('10.0.2.2', 40000, 8080, SYN), policy);
  if (verdict.pass || !verdict.reply) return t.fail('no reset');
  const reset = verdict.reply;
  t.deepEqual(reset.subarray(0, 6), GUEST_MAC, 'to the guest');
  t.deepEqual(reset.subarray(6, 12), SLIRP_MAC);
  const ip = reset.subarray(14, 34);
  t.is(checksum(ip), 0, 'IPv4 header checksum');
  t.deepEqual([...ip.subarray(12, 16)], [10, 0, 2, 2]);
  t.deepEqual([...ip.subarray(16, 20)], [10, 0, 2, 15]);
  const segment = reset.subarray(34);
  t.is(segment.readUInt16BE(0), 8080);
  t.is(segment.readUInt16BE(2), 40000);
  t.is(segment.readUInt32BE(8), 1001, 'acknowledges the SYN');
  t.is(segment[13], 0x14, 'RST and ACK');
  const pseudo = Buffer.concat([ip.subarray(12, 20), Buffer.from([0, 6, 0, 20]), segment]);
  t.is(checksum(pseudo), 0, 'TCP checksum');
});

test('a refused datagram is answered with ICMP port unreachable quoting it; a broadcast is not answered', (t) => {
  const datagram = udp('10.0.2.3', 53);
  const verdict = frameVerdict(datagram, policy);
  if (verdict.pass || !verdict.reply) return t.fail('no reply');
  const reply = verdict.reply;
  t.deepEqual(reply.subarray(0, 6), GUEST_MAC);
  const ip = reply.subarray(14, 34);
  t.is(checksum(ip), 0);
  t.is(ip[9], 1, 'ICMP');
  t.deepEqual([...ip.subarray(12, 16)], [10, 0, 2, 3], 'from the refused destination');
  const icmp = reply.subarray(34);
  t.deepEqual([icmp[0], icmp[1]], [3, 3], 'destination unreachable, port unreachable');
  t.is(checksum(icmp), 0);
  t.deepEqual(icmp.subarray(8), datagram.subarray(14, 14 + 28), 'the IP header and 8 bytes of the datagram');
  t.like(frameVerdict(udp('255.255.255.255', 5353), policy), { pass: false, reply: undefined });
});

const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

test('the filter passes allowed frames on, answers refused requests, and names each blocked destination once', async (t) => {
  const blocked: string[] = [];
  const filter = await GuestFilter.start({
    dir: join(tempDir('dp-filter-'), 's1'),
    policy,
    onBlocked: (what) => blocked.push(what),
  });
  try {
    const qemu = await qemuSide(filter);
    const allowed = tcp('10.0.2.2', 40000, 5000, SYN);
    // two frames in one write, then one split across writes: framing does not depend on chunks
    qemu.send(allowed, tcp('10.0.2.2', 40000, 8080, SYN));
    const split = udp('10.0.2.3', 53);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(split.length);
    const whole = Buffer.concat([length, split]);
    await settle();
    // a restarted QEMU: its old connection closes, its new one is taken (one peer per socket)
    qemu.close();
    await settle();
    const fromGuest = connect(filter.sockets.fromGuest);
    await new Promise((resolve) => fromGuest.on('connect', resolve));
    fromGuest.write(whole.subarray(0, 7));
    await settle();
    fromGuest.write(whole.subarray(7));
    const again = Buffer.concat([length, split]);
    fromGuest.write(again);
    await settle();
    t.deepEqual(qemu.host, [allowed]);
    t.is(qemu.guest.length, 3, 'the refused SYN got a reset, each refused datagram a port unreachable');
    t.deepEqual(blocked, ['tcp 10.0.2.2:8080', 'udp 10.0.2.3:53'], 'each destination once');
    t.like(filter.stats, { passed: 1, blocked: 3 });
    fromGuest.destroy();
  } finally {
    await filter.close();
  }
  t.false(existsSync(filter.sockets.fromGuest), 'the socket files are removed');
});
