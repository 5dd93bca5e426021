import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../core/private-dir.js';
import { LineSplitter } from '../console-lines.js';
import type { Connection } from './connection.js';
import type { Stream } from './stream.js';

export interface ConsoleWatchOptions {
  domain: string;
  /** devpivot's canonical console log (cleaned lines, appended across boots). */
  logPath: string;
  onLine: (line: string) => void;
  onWarning: (message: string) => void;
  connection: () => Connection;
}

/**
 * Reads a domain's serial console through a non-blocking libvirt stream driven by the event loop: no thread is
 * parked on it. Lines go to `onLine` and to the canonical log. If the stream ends while the domain still runs
 * (another client took the console with --force, or the connection was re-established) it re-attaches, politely
 * (without force), every 2 s until the domain stops.
 */
export class ConsoleWatch {
  readonly #o: ConsoleWatchOptions;
  #splitter = new LineSplitter();
  #log: WriteStream | undefined;
  #stream: Stream | undefined;
  #stopReading: (() => void) | undefined;
  #retry: NodeJS.Timeout | undefined;
  #wanted = false;
  #warned = false;
  /** An attach under way: another caller (the start, a retry) shares it rather than open a second console. */
  #attaching: Promise<void> | undefined;
  /** Bumped when the domain stops: a retry begun for the old process does not attach to the next one. */
  #generation = 0;

  constructor(options: ConsoleWatchOptions) {
    this.#o = options;
  }

  get attached(): boolean {
    return this.#stream !== undefined;
  }

  /**
   * Attach now (the domain must be running or paused). Throws if the console cannot be opened. Two attaches at
   * once are one: libvirt refuses a second session on a console ("Active console session exists").
   */
  attach(): Promise<void> {
    this.#wanted = true;
    if (this.#stream) return Promise.resolve();
    this.#attaching ??= this.#open().finally(() => {
      this.#attaching = undefined;
    });
    return this.#attaching;
  }

  async #open(): Promise<void> {
    if (!this.#log) {
      mkdirSync(dirname(this.#o.logPath), { recursive: true, mode: PRIVATE_DIR_MODE });
      this.#log = createWriteStream(this.#o.logPath, { flags: 'a', mode: PRIVATE_FILE_MODE });
      this.#log.on('error', (error) => this.#o.onWarning(`cannot write ${this.#o.logPath}: ${error.message}`));
    }
    const conn = this.#o.connection();
    const domain = await conn.lookupDomain(this.#o.domain);
    if (!domain) throw new Error(`domain ${this.#o.domain} disappeared`);
    const stream = conn.newStream(true);
    try {
      await domain.openConsole(stream, 0);
    } catch (error) {
      stream.free();
      throw error;
    } finally {
      domain.free();
    }
    if (!this.#wanted) {
      // detach() ran while the console was being opened: do not keep a stream nobody reads.
      setImmediate(() => void stream.close());
      return;
    }
    this.#stream = stream;
    this.#warned = false;
    this.#stopReading = stream.readEvents(
      (chunk) => this.#lines(this.#splitter.push(chunk)),
      () => setImmediate(() => this.#ended(stream)),
    );
  }

  /** Keep trying to attach until it works or detach() is called (after a reconnect, or when taken over). */
  reattachSoon(delayMs = 2000): void {
    this.#wanted = true;
    this.#scheduleRetry(delayMs);
  }

  /**
   * One retry in `delayMs`, re-armed on failure while the console is still wanted. detach() may run while a retry
   * awaits libvirt: every step re-checks `#wanted`, so a detached watch never re-arms (a re-armed timer on a
   * closed connection kept `devpivot run` alive after its run had ended).
   */
  #scheduleRetry(delayMs: number): void {
    if (this.#retry || this.#stream || !this.#wanted) return;
    const generation = this.#generation;
    this.#retry = setTimeout(async () => {
      this.#retry = undefined;
      const current = () => this.#wanted && generation === this.#generation;
      if (!current() || this.#stream) return;
      try {
        const conn = this.#o.connection();
        const domain = await conn.lookupDomain(this.#o.domain);
        const active = domain ? await domain.isActive().finally(() => domain.free()) : false;
        if (!active || !current()) return;
        await this.attach();
      } catch (error) {
        if (!current()) return;
        if (!this.#warned) {
          this.#warned = true;
          this.#o.onWarning(`console of ${this.#o.domain} unavailable (${(error as Error).message}); retrying`);
        }
        this.#scheduleRetry(delayMs);
      }
    }, delayMs);
    // Retrying only matters while the connection is open, and the open connection keeps the process alive.
    this.#retry.unref();
  }

  /**
   * The domain stopped: its console stream is gone; forget it without re-attaching. A retry armed when the old
   * stream ended is dropped: the next start attaches to the new process itself.
   */
  domainStopped(): void {
    this.#generation++;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#closeStream();
    this.#lines(this.#splitter.flush());
  }

  /** Stop reading and close the log. */
  detach(): void {
    this.#wanted = false;
    if (this.#retry) clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#closeStream();
    this.#lines(this.#splitter.flush());
    this.#log?.end();
    this.#log = undefined;
  }

  #lines(lines: string[]): void {
    for (const line of lines) {
      this.#log?.write(`${line}\n`);
      this.#o.onLine(line);
    }
  }

  #ended(stream: Stream): void {
    if (this.#stream !== stream) return;
    this.#closeStream();
    this.#scheduleRetry(2000);
  }

  #closeStream(): void {
    const stream = this.#stream;
    this.#stream = undefined;
    this.#stopReading?.();
    this.#stopReading = undefined;
    if (!stream) return;
    // Abort and free outside any libvirt callback that may still be on the stack.
    setImmediate(() => void stream.close());
  }
}
