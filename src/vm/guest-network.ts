/**
 * What a guest may send into QEMU's user-mode network (slirp), decided per Ethernet frame. devpivot's packet filter
 * (guest-filter.ts) sits between the guest's NIC and slirp (QEMU `filter-redirector`, see domain-xml.ts) and passes
 * a frame on only when this policy allows it. Pure: no I/O, unit-tested with crafted frames.
 *
 * slirp itself forwards whatever the guest sends: 10.0.2.2:P becomes a connection to the host's 127.0.0.1:P, any
 * other address a connection from the host to that address. The policy allows, and nothing else
 * (docs/ARCHITECTURE.md "## Guest network"):
 * - ARP (slirp's own answers, nothing leaves QEMU);
 * - DHCP to slirp's built-in server (UDP to port 67 of 10.0.2.2 or the broadcast address);
 * - TCP to 10.0.2.2 on the allowed ports (the registry the guest pulls from);
 * - TCP from the guest's port 22 to 10.0.2.2 that is not a connection request: the guest's side of the connections
 *   slirp's `hostfwd` opens to port 22 (ssh from the host's loopback). A SYN from port 22 would be the guest opening
 *   a connection of its own, so it is refused.
 * Everything else (DNS to 10.0.2.3, any other host port, the outside, ICMP, IPv6) is blocked; a blocked TCP
 * connection request is answered with a reset and a blocked UDP datagram with ICMP "port unreachable", so the guest
 * sees "connection refused" at once (as with slirp's `restrict=on`) instead of waiting for a timeout (a resolver
 * asking 10.0.2.3 for the host name, as sudo does, would wait seconds per try).
 */

/** slirp's address for the host (its loopback) as the guest sees it. */
export const GUEST_HOST_ADDRESS = '10.0.2.2';
const HOST = [10, 0, 2, 2] as const;
const SSH_PORT = 22;

export interface GuestNetworkPolicy {
  /** TCP ports of 10.0.2.2 (the host's 127.0.0.1) the guest may connect to. */
  readonly hostTcpPorts: readonly number[];
}

export type FrameVerdict =
  | { pass: true; why: 'arp' | 'dhcp' | 'host-port' | 'ssh' }
  /**
   * `what` names the blocked destination (`tcp 10.0.2.2:8080`, `udp 10.0.2.3:53`, `ipv6`…); `reply` goes back to the
   * guest (a TCP reset, an ICMP port unreachable).
   */
  | { pass: false; what: string; reply?: Buffer };

const ETH_ARP = 0x0806;
const ETH_IPV4 = 0x0800;
const ETH_IPV6 = 0x86dd;
const PROTO_ICMP = 1;
const PROTO_TCP = 6;
const PROTO_UDP = 17;
const TCP_FIN = 0x01;
const TCP_SYN = 0x02;
const TCP_RST = 0x04;
const TCP_ACK = 0x10;

export function frameVerdict(frame: Buffer, policy: GuestNetworkPolicy): FrameVerdict {
  if (frame.length < 14) return { pass: false, what: 'a runt frame' };
  const type = frame.readUInt16BE(12);
  if (type === ETH_ARP) return { pass: true, why: 'arp' };
  if (type === ETH_IPV6) return { pass: false, what: 'ipv6' };
  if (type !== ETH_IPV4) return { pass: false, what: `ethertype 0x${type.toString(16).padStart(4, '0')}` };
  if (frame.length < 34 || frame[14]! >> 4 !== 4) return { pass: false, what: 'a malformed IPv4 packet' };
  const ihl = (frame[14]! & 0x0f) * 4;
  const protocol = frame[23]!;
  const dst = frame.subarray(30, 34);
  const dstText = dst.join('.');
  const l4 = 14 + ihl;
  // Fragments other than the first carry no ports; slirp reassembles, so a fragment could hide a port.
  if ((frame.readUInt16BE(20) & 0x3fff) !== 0) return { pass: false, what: `a fragmented packet to ${dstText}` };
  if (protocol === PROTO_UDP) {
    if (frame.length < l4 + 8) return { pass: false, what: 'a malformed UDP packet' };
    const port = frame.readUInt16BE(l4 + 2);
    const broadcast = dstText === '255.255.255.255';
    if (port === 67 && (isHost(dst) || broadcast)) return { pass: true, why: 'dhcp' };
    const what = `udp ${dstText}:${port}`;
    return broadcast ? { pass: false, what } : { pass: false, what, reply: portUnreachable(frame, ihl) };
  }
  if (protocol === PROTO_TCP) {
    if (frame.length < l4 + 20) return { pass: false, what: 'a malformed TCP packet' };
    const sport = frame.readUInt16BE(l4);
    const dport = frame.readUInt16BE(l4 + 2);
    const flags = frame[l4 + 13]!;
    const request = (flags & (TCP_SYN | TCP_ACK)) === TCP_SYN;
    if (isHost(dst) && policy.hostTcpPorts.includes(dport)) return { pass: true, why: 'host-port' };
    if (isHost(dst) && sport === SSH_PORT && !request) return { pass: true, why: 'ssh' };
    const what = `tcp ${dstText}:${dport}`;
    return request ? { pass: false, what, reply: tcpReset(frame, ihl, l4) } : { pass: false, what };
  }
  if (protocol === PROTO_ICMP) return { pass: false, what: `icmp ${dstText}` };
  return { pass: false, what: `ip protocol ${protocol} to ${dstText}` };
}

function isHost(address: Buffer): boolean {
  return HOST.every((byte, i) => address[i] === byte);
}

/**
 * The RST+ACK a refused connection request gets (RFC 793 "Reset Generation": SEQ 0, ACK = the request's SEQ plus
 * its length), as an Ethernet frame from the request's destination back to the guest.
 */
function tcpReset(request: Buffer, ihl: number, l4: number): Buffer {
  const seq = request.readUInt32BE(l4 + 4);
  const flags = request[l4 + 13]!;
  const payload = request.readUInt16BE(16) - ihl - (request[l4 + 12]! >> 4) * 4;
  const consumed = Math.max(0, payload) + (flags & TCP_SYN ? 1 : 0) + (flags & TCP_FIN ? 1 : 0);
  const frame = Buffer.alloc(14 + 20 + 20);
  request.copy(frame, 0, 6, 12); // destination MAC: the guest's
  request.copy(frame, 6, 0, 6); // source MAC: what the guest sent to (slirp's)
  frame.writeUInt16BE(ETH_IPV4, 12);
  const ip = frame.subarray(14, 34);
  ip[0] = 0x45;
  ip.writeUInt16BE(40, 2);
  ip.writeUInt16BE(0x4000, 6); // don't fragment
  ip[8] = 64;
  ip[9] = PROTO_TCP;
  request.copy(ip, 12, 30, 34); // source: the refused destination
  request.copy(ip, 16, 26, 30); // destination: the guest
  ip.writeUInt16BE(checksum(ip), 10);
  const tcp = frame.subarray(34, 54);
  tcp.writeUInt16BE(request.readUInt16BE(l4 + 2), 0);
  tcp.writeUInt16BE(request.readUInt16BE(l4), 2);
  tcp.writeUInt32BE(0, 4);
  tcp.writeUInt32BE((seq + consumed) >>> 0, 8);
  tcp[12] = 5 << 4;
  tcp[13] = TCP_RST | TCP_ACK;
  const pseudo = Buffer.alloc(12 + 20);
  ip.copy(pseudo, 0, 12, 20);
  pseudo[9] = PROTO_TCP;
  pseudo.writeUInt16BE(20, 10);
  tcp.copy(pseudo, 12);
  tcp.writeUInt16BE(checksum(pseudo), 16);
  return frame;
}

/**
 * ICMP destination unreachable, port unreachable (RFC 792: type 3, code 3, the datagram's IP header and its first 8
 * bytes), from the datagram's destination back to the guest.
 */
function portUnreachable(datagram: Buffer, ihl: number): Buffer {
  const quoted = datagram.subarray(14, Math.min(datagram.length, 14 + ihl + 8));
  const frame = Buffer.alloc(14 + 20 + 8 + quoted.length);
  datagram.copy(frame, 0, 6, 12);
  datagram.copy(frame, 6, 0, 6);
  frame.writeUInt16BE(ETH_IPV4, 12);
  const ip = frame.subarray(14, 34);
  ip[0] = 0x45;
  ip.writeUInt16BE(20 + 8 + quoted.length, 2);
  ip[8] = 64;
  ip[9] = PROTO_ICMP;
  datagram.copy(ip, 12, 30, 34);
  datagram.copy(ip, 16, 26, 30);
  ip.writeUInt16BE(checksum(ip), 10);
  const icmp = frame.subarray(34);
  icmp[0] = 3;
  icmp[1] = 3;
  quoted.copy(icmp, 8);
  icmp.writeUInt16BE(checksum(icmp), 2);
  return frame;
}

/** The Internet checksum (RFC 1071) of `data`. */
export function checksum(data: Buffer): number {
  let sum = 0;
  for (let i = 0; i + 1 < data.length; i += 2) sum += data.readUInt16BE(i);
  if (data.length % 2 === 1) sum += data[data.length - 1]! << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}
