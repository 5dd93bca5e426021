import { Transform, type TransformCallback } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Fault injection the engine toggles at run time (mutate the object; every blob response reads it per chunk):
 * - `slowBytesPerSecond`: throttle blob GET bodies to about this rate (undefined or 0 = full speed).
 * - `corruptBlobs`: GET of *layer* blobs (never manifests or configs) serves content with flipped bytes but the
 *   same length, so clients fail digest verification as with a corrupted image on a real registry.
 */
export interface RegistryFaults {
  slowBytesPerSecond?: number;
  corruptBlobs?: boolean;
}

/** How often a blob response reports progress (plus one final report at the end). */
export const PROGRESS_INTERVAL_MS = 250;

/**
 * The body transform of a blob GET: counts bytes for progress, and applies the throttle and corruption faults.
 * With no fault active a chunk passes through untouched (one function call per 1 MiB chunk).
 */
export class BlobBodyTransform extends Transform {
  sent = 0;
  #lastReport = 0;

  constructor(
    private readonly faults: RegistryFaults,
    private readonly corrupt: boolean,
    private readonly onProgress: (sent: number, final: boolean) => void,
  ) {
    super({ highWaterMark: 1 << 20 });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.corrupt && chunk.length > 0) {
      // Copy: the read buffer may be pooled. Flip one byte in the middle of every chunk.
      chunk = Buffer.from(chunk);
      const at = chunk.length >> 1;
      chunk[at] = chunk[at]! ^ 0xff;
    }
    const rate = this.faults.slowBytesPerSecond ?? 0;
    if (rate > 0) {
      this.#throttled(chunk).then(() => callback(), callback);
      return;
    }
    this.#count(chunk.length);
    callback(null, chunk);
  }

  async #throttled(chunk: Buffer): Promise<void> {
    // Slices of ~1/20 s so the rate is smooth and a fault change takes effect quickly.
    for (let offset = 0; offset < chunk.length; ) {
      const current = this.faults.slowBytesPerSecond ?? 0;
      const slice = current > 0 ? Math.max(1, Math.floor(current / 20)) : chunk.length - offset;
      const part = chunk.subarray(offset, offset + slice);
      offset += part.length;
      this.push(part);
      this.#count(part.length);
      if (current > 0) await sleep((part.length / current) * 1000);
    }
  }

  #count(bytes: number): void {
    this.sent += bytes;
    const now = Date.now();
    if (now - this.#lastReport >= PROGRESS_INTERVAL_MS) {
      this.#lastReport = now;
      this.onProgress(this.sent, false);
    }
  }

  override _flush(callback: TransformCallback): void {
    this.onProgress(this.sent, true);
    callback();
  }
}
