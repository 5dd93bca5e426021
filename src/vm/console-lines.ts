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
 * Turns a console byte stream into clean text lines: UTF-8 decoded across chunk boundaries, split on LF (CRLF
 * too), escapes stripped. A line longer than `maxLine` is emitted in pieces so a guest that never prints a
 * newline cannot grow memory without bound.
 */
export class LineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  #pending = '';
  readonly #maxLine: number;

  constructor(maxLine = 8192) {
    this.#maxLine = maxLine;
  }

  push(chunk: Buffer | string): string[] {
    this.#pending += typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    const parts = this.#pending.split('\n');
    this.#pending = parts.pop() ?? '';
    const lines = parts.map(cleanLine);
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
    const line = cleanLine(rest);
    return line.length > 0 ? [line] : [];
  }
}
