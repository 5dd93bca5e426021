import { StringDecoder } from 'node:string_decoder';

// CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), charset selection (ESC ( X) and two-byte escapes.
const ANSI =
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()*+][ -~]|\x1b[0-~]|\x9b[0-?]*[ -/]*[@-~]/g;
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** Remove terminal escapes and control characters; a bare CR keeps what was written after it (a redraw). */
export function cleanLine(raw: string): string {
  const withoutEscapes = raw.replace(ANSI, '');
  const afterRedraw = withoutEscapes.includes('\r')
    ? (withoutEscapes
        .split('\r')
        .filter((part) => part.length > 0)
        .pop() ?? '')
    : withoutEscapes;
  return afterRedraw.replace(CONTROL, '').trimEnd();
}

/**
 * A kernel message that the guest's console printed in the middle of a userspace line: the kernel writes to the
 * serial port itself, between the chunks the tty sends, so `[  222.705455] hrtimer: …\n` can land inside a program's
 * line, whose rest (at least its newline) follows on the next line (seen: a bootc progress line whose JSON then did
 * not parse). `interruption(line)` is the index where such a message starts, or -1.
 */
const KERNEL_MESSAGE = /\[\s*\d+\.\d{6}\] /;

export function interruption(line: string): number {
  const match = KERNEL_MESSAGE.exec(line);
  return match && match.index > 0 ? match.index : -1;
}

/**
 * Turns a console byte stream into clean text lines: UTF-8 decoded across chunk boundaries, split on LF (CRLF
 * too), escapes stripped, a kernel message printed inside a line taken out of it (`interruption`). A line longer
 * than `maxLine` is emitted in pieces so a guest that never prints a newline cannot grow memory without bound.
 */
export class LineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  #pending = '';
  /** The text of a line a kernel message interrupted: it goes on at the start of the next line. */
  #interrupted = '';
  readonly #maxLine: number;

  constructor(maxLine = 8192) {
    this.#maxLine = maxLine;
  }

  push(chunk: Buffer | string): string[] {
    this.#pending += typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    const parts = this.#pending.split('\n');
    this.#pending = parts.pop() ?? '';
    const lines: string[] = [];
    for (const part of parts) {
      const line = this.#interrupted + cleanLine(part);
      const at = interruption(line);
      this.#interrupted = at < 0 ? '' : line.slice(0, at);
      lines.push(at < 0 ? line.trimEnd() : line.slice(at));
      if (this.#interrupted.length > this.#maxLine) {
        lines.push(this.#interrupted);
        this.#interrupted = '';
      }
    }
    while (this.#pending.length > this.#maxLine) {
      lines.push(cleanLine(this.#pending.slice(0, this.#maxLine)));
      this.#pending = this.#pending.slice(this.#maxLine);
    }
    return lines;
  }

  /** The last unterminated line, if any (at end of stream). */
  flush(): string[] {
    const rest = this.#pending + this.#decoder.end();
    this.#pending = '';
    const line = (this.#interrupted + cleanLine(rest)).trimEnd();
    this.#interrupted = '';
    return line.length > 0 ? [line] : [];
  }
}
