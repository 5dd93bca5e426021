/** Crafted guest frames and a stand-in for QEMU's side of a guest filter (test/vm/guest-network.test.ts, engine tests). */
import { connect, type Socket } from 'node:net';
import type { GuestFilterSockets } from '../../src/vm/guest-filter.js';
import { checksum } from '../../src/vm/guest-network.js';

export const GUEST_MAC = Buffer.from('525400123456', 'hex');
export const SLIRP_MAC = Buffer.from('525400123502', 'hex');
export function ethernet(type: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(14);
  SLIRP_MAC.copy(header, 0);
  GUEST_MAC.copy(header, 6);
  header.writeUInt16BE(type, 12);
  return Buffer.concat([header, payload]);
}

export function ipv4(protocol: number, dst: string, l4: Buffer, fragment = 0): Buffer {
  const ip = Buffer.alloc(20);
  ip[0] = 0x45;
  ip.writeUInt16BE(20 + l4.length, 2);
  ip.writeUInt16BE(fragment, 6);
  ip[8] = 64;
  ip[9] = protocol;
  Buffer.from([10, 0, 2, 15]).copy(ip, 12);
  Buffer.from(dst.split('.').map(Number)).copy(ip, 16);
  ip.writeUInt16BE(checksum(ip), 10);
  return ethernet(0x0800, Buffer.concat([ip, l4]));
}

export function tcp(dst: string, sport: number, dport: number, flags: number, payload = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(20);
  header.writeUInt16BE(sport, 0);
  header.writeUInt16BE(dport, 2);
  header.writeUInt32BE(1000, 4);
  header[12] = 5 << 4;
  header[13] = flags;
  return ipv4(6, dst, Buffer.concat([header, payload]));
}

export function udp(dst: string, dport: number): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt16BE(68, 0);
  header.writeUInt16BE(dport, 2);
  header.writeUInt16BE(8, 4);
  return ipv4(17, dst, header);
}

export const SYN = 0x02;
export const ACK = 0x10;
export const PSH = 0x08;

/** A stand-in for QEMU's three chardev connections to the filter. */
export async function qemuSide(filter: { sockets: GuestFilterSockets }) {
  const open = (path: string) =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(path, () => resolve(socket));
      socket.on('error', reject);
    });
  const fromGuest = await open(filter.sockets.fromGuest);
  const toHost = await open(filter.sockets.toHost);
  const toGuest = await open(filter.sockets.toGuest);
  const received = (socket: Socket) => {
    const frames: Buffer[] = [];
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
        frames.push(pending.subarray(4, 4 + pending.readUInt32BE(0)));
        pending = pending.subarray(4 + pending.readUInt32BE(0));
      }
    });
    return frames;
  };
  const send = (...frames: Buffer[]) =>
    fromGuest.write(
      Buffer.concat(
        frames.flatMap((frame) => {
          const length = Buffer.alloc(4);
          length.writeUInt32BE(frame.length);
          return [length, frame];
        }),
      ),
    );
  return { send, host: received(toHost), guest: received(toGuest), close: () => fromGuest.destroy() };
}
