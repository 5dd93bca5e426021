/**
 * Run one command on the remote libvirt host over its own ssh login (the URI's user, port and keyfile), as
 * `ssh … -- HOST 'ARG' 'ARG'…`: ssh hands the joined words to the login shell there, so every word is quoted for
 * a POSIX shell here and reaches the command as written.
 */
import { run } from '../../core/exec.js';
import { type SshDestination, sshOptionsOf } from './ssh-destination.js';

export interface RemoteCommandResult {
  ok: boolean;
  /** The command's exit status (ssh's own failures are 255); null when it did not run or timed out. */
  code: number | null;
  /** ssh's and the command's last words when it failed. */
  output: string;
}

export async function runRemote(
  destination: SshDestination,
  argv: readonly string[],
  options: { timeoutMs?: number } = {},
): Promise<RemoteCommandResult> {
  const result = await run('ssh', remoteCommandArgs(destination, argv), { timeoutMs: options.timeoutMs ?? 20_000 });
  const output = (result.spawnError?.message ?? (result.timedOut ? 'timed out' : result.all)).trim();
  return { ok: result.code === 0, code: result.code, output: output.split('\n').slice(-6).join('\n') };
}

/** ssh's arguments for `argv` on the destination. */
export function remoteCommandArgs(destination: SshDestination, argv: readonly string[]): string[] {
  // `--` before the host: neither it nor a word of the command can be read as an ssh option.
  return [...sshOptionsOf(destination), '-T', '--', destination.host, ...argv.map(shellQuote)];
}

/** One word for a POSIX shell: single quotes, each ' written as '\''. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
