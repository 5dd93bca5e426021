/**
 * Stream a blob flight to one client while it is written: read what the file holds, wait for more, repeat. The last
 * byte is held back until the flight has verified the digest, so a mismatch always ends the response short (the
 * connection is destroyed): no client sees a complete, wrong blob.
 */
import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { drained } from '../blob-stream.js';
import { isMissing } from '../storage/files.js';
import type { BlobFlight } from './blob-flight.js';

const CHUNK = 1024 * 1024;

async function openEither(flight: BlobFlight): Promise<FileHandle> {
  try {
    return await open(flight.temp, 'r');
  } catch (error) {
    if (!isMissing(error)) throw error;
    // The temp file is gone: renamed into the pool (the flight is then linking it, or done) or deleted after a
    // failure. Which one is only known when the flight ends; a small blob often gets here before that.
    await flight.finished;
    if (flight.state === 'done') return open(flight.final, 'r');
    throw flight.error ?? error;
  }
}

/** Write the flight's bytes to `res` (headers already set); resolves with the bytes sent. */
export async function streamFlight(
  flight: BlobFlight,
  res: ServerResponse,
  onSent: (sent: number) => void,
): Promise<number> {
  const handle = await openEither(flight);
  let position = 0;
  try {
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      if (res.destroyed) return position;
      if (flight.state === 'failed') {
        res.destroy(flight.error);
        return position;
      }
      const available = flight.state === 'done' ? flight.written : Math.max(0, flight.written - 1);
      if (position >= available) {
        if (flight.state === 'done') break;
        await flight.changed();
        continue;
      }
      const { bytesRead } = await handle.read(buffer, 0, Math.min(CHUNK, available - position), position);
      if (bytesRead === 0) break;
      position += bytesRead;
      onSent(position);
      if (!res.write(Buffer.from(buffer.subarray(0, bytesRead)))) await drained(res);
    }
    res.end();
    return position;
  } finally {
    await handle.close();
  }
}
