/**
 * The one way devpivot runs a child process: `run` for a program that finishes (captured output, hard
 * deadline), `startProcess` for a long-running one whose output is read while it runs (the fixture build, the
 * KVM probe). Every child leads its own process group, and killing means killing the group, so nothing a child
 * started (qemu under a script) can outlive devpivot's decision to stop it. `runInteractive` is the exception: a
 * program on the user's terminal (`devpivot ssh`) stays in devpivot's group, where the terminal is.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

const osSignals: Partial<Record<NodeJS.Signals, number>> = constants.signals;

export type OutputStream = 'stdout' | 'stderr';

export interface ProcessResult {
  /** null when the process was killed (timeout) or could not start. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr interleaved in the order they arrived (what a terminal would have shown). */
  all: string;
  timedOut: boolean;
  /** Set when the program could not be started (ENOENT, EACCES). */
  spawnError?: NodeJS.ErrnoException;
}

export interface ProcessExit {
  code: number | null;
  /** The signal that ended it, if one did. */
  signal: NodeJS.Signals | null;
  /** Set when the program could not be started (ENOENT, EACCES): then there is no output and no pid. */
  spawnError?: NodeJS.ErrnoException;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Written to stdin, which is then closed; without it stdin is /dev/null. */
  input?: string;
  /** Output as it arrives (UTF-8 text, chunks of any size). */
  onOutput?: (text: string, stream: OutputStream) => void;
  /** Output as complete lines, without the newline, per stream; a last unterminated line comes at exit. */
  onLine?: (line: string, stream: OutputStream) => void;
  /** Aborting it sends `abortSignal` (default SIGTERM) to the process group. */
  signal?: AbortSignal;
  abortSignal?: NodeJS.Signals;
}

export interface RunningProcess {
  readonly pid: number | undefined;
  /** Resolves once the process has exited and its output was delivered. Never rejects. */
  readonly exited: Promise<ProcessExit>;
  /** Signal the whole process group; a no-op once the process is gone. */
  kill(signal?: NodeJS.Signals): void;
}

/** Start `file` with its own process group and report its output while it runs. Never throws. */
export function startProcess(file: string, args: readonly string[], options: StartOptions = {}): RunningProcess {
  const child = spawn(file, args, {
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    env: options.env ?? process.env,
    cwd: options.cwd,
    detached: true,
  });
  let gone = false;
  const kill = (signal: NodeJS.Signals = 'SIGTERM') => {
    if (gone) return;
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      child.kill(signal);
    }
  };
  const pending: Record<OutputStream, string> = { stdout: '', stderr: '' };
  const onChunk = (stream: OutputStream) => (text: string) => {
    options.onOutput?.(text, stream);
    if (!options.onLine) return;
    const lines = (pending[stream] + text).split('\n');
    pending[stream] = lines.pop() ?? '';
    for (const line of lines) options.onLine(line, stream);
  };
  child.stdout?.setEncoding('utf8').on('data', onChunk('stdout'));
  child.stderr?.setEncoding('utf8').on('data', onChunk('stderr'));
  if (child.stdin) {
    child.stdin.on('error', () => {}); // a child that exits without reading its input
    child.stdin.end(options.input);
  }
  const abort = () => kill(options.abortSignal ?? 'SIGTERM');
  options.signal?.addEventListener('abort', abort, { once: true });
  const exited = new Promise<ProcessExit>((resolve) => {
    const finish = (exit: ProcessExit) => {
      if (gone) return;
      gone = true;
      options.signal?.removeEventListener('abort', abort);
      for (const stream of ['stdout', 'stderr'] as const) {
        if (pending[stream]) options.onLine?.(pending[stream], stream);
        pending[stream] = '';
      }
      resolve(exit);
    };
    child.on('error', (error: NodeJS.ErrnoException) => finish({ code: null, signal: null, spawnError: error }));
    child.on('close', (code, signal) => finish({ code, signal }));
  });
  if (options.signal?.aborted) abort();
  return { pid: child.pid, exited, kill };
}

/**
 * Run a program to completion with a hard deadline, capturing output. Never throws: callers decide what a
 * failure means. On timeout the whole process group is killed, so a hung child (qemu) cannot outlive us; when
 * `signal` aborts it is sent SIGTERM (the result then says how it ended; the caller checks its signal).
 */
export async function run(
  file: string,
  args: readonly string[],
  options: { timeoutMs?: number; input?: string; env?: NodeJS.ProcessEnv; cwd?: string; signal?: AbortSignal } = {},
): Promise<ProcessResult> {
  const output: Record<OutputStream | 'all', string> = { stdout: '', stderr: '', all: '' };
  const child = startProcess(file, args, {
    env: options.env,
    cwd: options.cwd,
    signal: options.signal,
    input: options.input ?? '',
    onOutput: (text, stream) => {
      output[stream] += text;
      output.all += text;
    },
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs ?? 30_000);
  const exit = await child.exited;
  clearTimeout(timer);
  return {
    code: timedOut ? null : exit.code,
    ...output,
    timedOut,
    ...(exit.spawnError ? { spawnError: exit.spawnError } : {}),
  };
}

/**
 * Run a program on this terminal (inherited stdin, stdout, stderr, in devpivot's own process group so the
 * terminal reads and signals reach it) and resolve with its exit status: 128 + the signal number when a signal
 * ended it, null when it could not start (`spawnError`). For interactive programs (`devpivot ssh`).
 */
export function runInteractive(
  file: string,
  args: readonly string[],
): Promise<{ code: number | null; spawnError?: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: 'inherit' });
    child.on('error', (error: NodeJS.ErrnoException) => resolve({ code: null, spawnError: error }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 + (osSignals[signal] ?? 0) : null) }));
  });
}

/**
 * Start a program that outlives this process: its own session, no stdio, not waited for. For the cleanup a
 * forced exit hands over (`devpivot down` after a second Ctrl-C); returns its pid, or undefined when it could not
 * start.
 */
export function startDetached(file: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv } = {}) {
  try {
    const child = spawn(file, args, { detached: true, stdio: 'ignore', env: options.env ?? process.env });
    child.on('error', () => {});
    child.unref();
    return child.pid;
  } catch {
    return undefined;
  }
}
