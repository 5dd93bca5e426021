import type { Hash } from 'node:crypto';
import * as fs from 'node:fs';
import { Writable } from 'node:stream';

/** Write every buffer, continuing after short writes (rare on regular files, but legal). */
function writeAll(fd: number, buffers: Buffer[], callback: (error?: Error | null) => void): void {
  fs.writev(fd, buffers, null, (error, written) => {
    if (error) {
      callback(error);
      return;
    }
    let rest = written;
    const remaining: Buffer[] = [];
    for (const buffer of buffers) {
      if (rest >= buffer.length) {
        rest -= buffer.length;
        continue;
      }
      remaining.push(rest > 0 ? buffer.subarray(rest) : buffer);
      rest = 0;
    }
    if (remaining.length === 0) {
      callback();
      return;
    }
    writeAll(fd, remaining, callback);
  });
}

/**
 * A Writable that appends to an open file descriptor while feeding a sha256 hash, and fsyncs on finish. Buffered
 * chunks go down in one writev() so a fast socket costs one syscall per batch, not one per 16 KiB chunk.
 * The caller owns `fd` (opens and closes it).
 */
export class HashingFileWriter extends Writable {
  bytes = 0;

  constructor(
    private readonly fd: number,
    readonly hash: Hash,
    /** Refuse (with an error) to write more than this many bytes in total. */
    private readonly limit = Number.POSITIVE_INFINITY,
  ) {
    super({ highWaterMark: 8 * 1024 * 1024 });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this._writev([{ chunk }], callback);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    const buffers = chunks.map((entry) => entry.chunk);
    for (const buffer of buffers) {
      this.hash.update(buffer);
      this.bytes += buffer.length;
    }
    if (this.bytes > this.limit) {
      callback(new RangeError(`more than ${this.limit} bytes`));
      return;
    }
    writeAll(this.fd, buffers, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    fs.fsync(this.fd, (error) => callback(error));
  }
}
