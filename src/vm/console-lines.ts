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
 * serial port directly, so its `[  222.705455] hrtimer: …` can land after a program's text and before that
 * program's newline (seen: a bootc progress line, whose JSON then did not parse). Split there, so both stay lines.
 */
const KERNEL_MESSAGE = /\[\s*\d+\.\d{6}\] /g;

export function splitKernelMessages(line: string): string[] {
  const starts = [...line.matchAll(KERNEL_MESSAGE)].map((match) => match.index).filter((index) => index > 0);
  if (starts.length === 0) return [line];
  const pieces: string[] = [];
  let from = 0;
  for (const start of starts) {
    pieces.push(line.slice(from, start).trimEnd());
    from = start;
  }
  pieces.push(line.slice(from));
  return pieces.filter((piece) => piece.length > 0);
}

/**
 * Turns a console byte stream into clean text lines: UTF-8 decoded across chunk boundaries, split on LF (CRLF
 * too), escapes stripped, a kernel message printed mid-line made a line of its own. A line longer than `maxLine`
 * is emitted in pieces so a guest that never prints a newline cannot grow memory without bound.
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
    const lines = parts.flatMap((part) => splitKernelMessages(cleanLine(part)));
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
