/** agetty's prompt ends without a newline, so the next kernel or journal line is glued to it. */
const LOGIN_PROMPT = /^[\w.-]+ login: (?=\S)/;

/**
 * Console noise before the text: kernel timestamps, systemd status tags, ANSI colours, carriage returns, a login
 * prompt. (Not `vm/console-lines.ts` `cleanLine`, which only removes terminal escapes and control characters.)
 */
export function stripConsoleNoise(line: string): string {
  return line
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
    .replace(/\r/g, '')
    .replace(LOGIN_PROMPT, '')
    .replace(/^\s*\[\s*\d+\.\d+\]\s?/, '')
    .replace(/^\s*\[\s*(OK|FAILED|DEPEND|TIME|\*+)\s*\]\s?/, '')
    .trim();
}
