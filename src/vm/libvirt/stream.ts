import { callAsync, callSync } from './call.js';
import { errorMark, errorSince, toLibvirtError } from './errors.js';
import { allocNative, libvirt, type Ptr, registerCallback, unregisterCallback } from './ffi.js';
import { Handle } from './handle.js';

export const StreamFlag = { nonBlock: 1 } as const;
const StreamEvent = { readable: 1, writable: 2, error: 4, hangup: 8 } as const;

const CHUNK = 256 * 1024;

/** A virStreamPtr: uploads, downloads and console I/O. */
export class Stream {
  readonly #handle: Handle;
  readonly #uri: string;
  #eventCallback: Ptr | undefined;

  constructor(ptr: Ptr, uri: string) {
    this.#handle = new Handle(ptr, (p) => libvirt().virStreamFree(p));
    this.#uri = uri;
  }

  static create(conn: Ptr, uri: string, flags = 0): Stream {
    const ptr = callSync('virStreamNew', libvirt().virStreamNew, [conn, flags], { uri });
    return new Stream(ptr!, uri);
  }

  get ptr(): Ptr {
    return this.#handle.ptr;
  }

  /** Send everything from `source` (blocking stream; each send on a worker thread), then finish the stream. */
  async sendAll(source: AsyncIterable<Buffer | Uint8Array>, onProgress?: (sent: number) => void): Promise<number> {
    const native = allocNative(CHUNK);
    let sent = 0;
    try {
      for await (const chunk of source) {
        for (let offset = 0; offset < chunk.length; ) {
          const size = Math.min(CHUNK, chunk.length - offset);
          native.bytes.set(chunk.subarray(offset, offset + size), 0);
          let done = 0;
          while (done < size) {
            const n = await callAsync(
              'stream send',
              libvirt().virStreamSend,
              [this.ptr, native.pointer + BigInt(done), size - done],
              { uri: this.#uri },
            );
            done += n;
          }
          offset += size;
          sent += size;
          onProgress?.(sent);
        }
      }
      await callAsync('stream finish', libvirt().virStreamFinish, [this.ptr], { uri: this.#uri });
      return sent;
    } catch (error) {
      await this.abort();
      throw error;
    } finally {
      native.free();
    }
  }

  /** Receive up to `limit` bytes (blocking stream, on a worker thread) until the sender finishes. */
  async receiveAll(limit: number): Promise<Buffer> {
    const native = allocNative(CHUNK);
    const parts: Buffer[] = [];
    let total = 0;
    try {
      while (total < limit) {
        const n = await callAsync('stream receive', libvirt().virStreamRecv, [this.ptr, native.pointer, CHUNK], {
          uri: this.#uri,
        });
        if (n === 0) break;
        parts.push(Buffer.from(native.bytes.subarray(0, n)));
        total += n;
      }
      await callAsync('stream finish', libvirt().virStreamFinish, [this.ptr], { uri: this.#uri });
      return Buffer.concat(parts).subarray(0, limit);
    } catch (error) {
      await this.abort();
      throw error;
    } finally {
      native.free();
    }
  }

  /**
   * Read a non-blocking stream from the libvirt event loop: no thread waits on it. `onData` gets every chunk,
   * `onEnd` is called once (EOF, hangup or error). Returns a function that stops reading.
   */
  readEvents(onData: (chunk: Buffer) => void, onEnd: (error?: Error) => void): () => void {
    const native = allocNative(CHUNK);
    let ended = false;
    const end = (error?: Error) => {
      if (ended) return;
      ended = true;
      stop();
      onEnd(error);
    };
    const drain = () => {
      while (!ended) {
        const mark = errorMark();
        const n = libvirt().virStreamRecv(this.ptr, native.pointer, CHUNK);
        if (n === -2) return;
        if (n === 0) return end();
        if (n < 0) return end(toLibvirtError('console read', errorSince(mark), this.#uri));
        onData(Buffer.from(native.bytes.subarray(0, n)));
      }
    };
    const callback = registerCallback('virStreamEventCallback', (_stream: Ptr, events: number) => {
      if (events & StreamEvent.readable) drain();
      if (!ended && events & (StreamEvent.error | StreamEvent.hangup)) {
        drain();
        end(events & StreamEvent.error ? new Error('console stream error') : undefined);
      }
    });
    this.#eventCallback = callback;
    callSync(
      'stream event callback',
      libvirt().virStreamEventAddCallback,
      [this.ptr, StreamEvent.readable | StreamEvent.error | StreamEvent.hangup, callback, null, null],
      { uri: this.#uri },
    );
    let stopped = false;
    function stop() {
      if (stopped) return;
      stopped = true;
      native.free();
    }
    return () => {
      ended = true;
      this.#removeEventCallback();
      stop();
    };
  }

  /** Write to a non-blocking stream (console input). Returns bytes accepted; 0 when it would block. */
  trySend(data: Buffer): number {
    const native = allocNative(Math.max(1, data.length));
    try {
      native.bytes.set(data, 0);
      const n = callSync('console write', libvirt().virStreamSend, [this.ptr, native.pointer, data.length], {
        uri: this.#uri,
        failed: (r) => r === -1,
      });
      return n === -2 ? 0 : n;
    } finally {
      native.free();
    }
  }

  #removeEventCallback(): void {
    if (this.#eventCallback === undefined || this.#handle.freed) return;
    libvirt().virStreamEventRemoveCallback(this.ptr);
    // koffi keeps the trampoline until unregistered; libvirt no longer calls it after removal.
    const callback = this.#eventCallback;
    this.#eventCallback = undefined;
    setImmediate(() => unregisterCallback(callback));
  }

  /** Abort the transfer (an RPC for remote streams: on a worker thread). Never throws. */
  async abort(): Promise<void> {
    if (this.#handle.freed) return;
    this.#removeEventCallback();
    await callAsync('stream abort', libvirt().virStreamAbort, [this.ptr], { uri: this.#uri }).catch(() => {});
  }

  /** Abort, then free: the end of a console stream. Never throws. */
  async close(): Promise<void> {
    await this.abort();
    this.free();
  }

  free(): void {
    if (this.#handle.freed) return;
    this.#removeEventCallback();
    this.#handle.free();
  }
}
