import { spawn } from 'node:child_process';

export interface RunResult {
  /** null when the process was killed (timeout) or could not start. */
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Set when the program could not be started (ENOENT, EACCES). */
  spawnError?: NodeJS.ErrnoException;
}

/**
 * Run a program to completion with a hard deadline, capturing output. Never throws: callers decide what a
 * failure means. On timeout the whole process group is killed, so a hung child (qemu) cannot outlive us.
 */
export function run(
  file: string,
  args: readonly string[],
  options: { timeoutMs?: number; input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(file, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: options.env ?? process.env,
      cwd: options.cwd,
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let settled = false;
    const finish = (result: RunResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, options.timeoutMs ?? 30_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', (error: NodeJS.ErrnoException) =>
      finish({ code: null, stdout, stderr, timedOut, spawnError: error }),
    );
    child.on('close', (code) => finish({ code: timedOut ? null : code, stdout, stderr, timedOut }));
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
  });
}
