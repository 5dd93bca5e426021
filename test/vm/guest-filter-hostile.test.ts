/**
 * The guest channel against another local user: the sockets live in a private directory (owner checked, no symlink
 * followed), a second connection cannot take a socket over from QEMU's, and an oversized frame is refused at once
 * without buffering it (one 48 MiB frame used to stall the event loop for seconds, buffered quadratically).
 */
import { lstatSync, mkdirSync, statSync, symlinkSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { GuestFilter } from '../../src/vm/guest-filter.js';
import { tempDir } from '../helpers/temp.js';
import { qemuSide, SYN, tcp } from './frames.js';

const policy = { hostTcpPorts: [5000] };
const settle = (ms = 150) => new Promise((resolve) => setTimeout(resolve, ms));

function open(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path, () => resolve(socket));
    socket.on('error', reject);
  });
}

test('a second connection to a socket QEMU holds is refused; QEMU keeps the guest network', async (t) => {
  const filter = await GuestFilter.start({ dir: join(tempDir('dp-hostile-'), 's1'), policy });
  t.teardown(() => filter.close());
  const qemu = await qemuSide(filter);
  const intruderHost = await open(filter.sockets.toHost);
  const intruderGuest = await open(filter.sockets.fromGuest);
  const intruderFrames: Buffer[] = [];
  intruderHost.on('data', (chunk: Buffer) => intruderFrames.push(chunk));
  const closed = new Promise((resolve) => intruderHost.on('close', resolve));
  intruderGuest.on('error', () => {});
  intruderHost.on('error', () => {});
  await settle();
  const allowed = tcp('10.0.2.2', 40000, 5000, SYN);
  qemu.send(allowed);
  await settle();
  t.deepEqual(qemu.host, [allowed], 'QEMU’s toHost connection still gets the frames');
  t.deepEqual(intruderFrames, [], 'the intruder got nothing');
  await closed;
  t.true(intruderGuest.destroyed || intruderGuest.readableEnded, 'the second fromGuest connection was refused');
  qemu.close();
});

test('a 48 MiB frame is refused at once; the event loop is not stalled', async (t) => {
  const filter = await GuestFilter.start({ dir: join(tempDir('dp-hostile-'), 's1'), policy });
  t.teardown(() => filter.close());
  const socket = await open(filter.sockets.fromGuest);
  socket.on('error', () => {});
  const closed = new Promise((resolve) => socket.on('close', resolve));
  let worst = 0;
  let last = Date.now();
  const ticker = setInterval(() => {
    const now = Date.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 10);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(48 * 1024 * 1024);
  const started = Date.now();
  socket.write(length);
  const chunk = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < 48 && !socket.destroyed; i += 1) socket.write(chunk);
  await Promise.race([closed, settle(5000)]);
  clearInterval(ticker);
  t.true(socket.destroyed || socket.readableEnded, 'the connection with the oversized frame was closed');
  t.true(Date.now() - started < 3000, `refused in ${Date.now() - started} ms`);
  t.true(worst < 500, `the event loop stalled ${worst} ms`);
});

test('the socket directory is private: 0700 or 0711, owned by the caller; a symlinked one is refused', async (t) => {
  const parent = tempDir('dp-hostile-');
  const filter = await GuestFilter.start({ dir: join(parent, 's1'), policy });
  t.teardown(() => filter.close());
  const mode = statSync(join(parent, 's1')).mode & 0o777;
  t.true(mode === 0o700 || mode === 0o711, `mode ${mode.toString(8)}`);
  const elsewhere = join(parent, 'elsewhere');
  mkdirSync(elsewhere, { mode: 0o755 });
  symlinkSync(elsewhere, join(parent, 's2'));
  await t.throwsAsync(GuestFilter.start({ dir: join(parent, 's2'), policy }), { message: /symlink|not a directory/ });
  t.is(lstatSync(elsewhere).mode & 0o777, 0o755, 'chmod followed the symlink');
});
