/**
 * The CLI as a child process that a test can watch and signal: its output as it arrives, `until` a line shows,
 * `signal` it, and how long after the last signal it exited.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { binPath } from '../helpers/cli.js';

export interface Watched {
  child: ChildProcess;
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves when `pattern` appears in stdout or stderr; rejects after `ms`. */
  until(pattern: RegExp, ms?: number): Promise<void>;
  /** Send a signal and remember when. */
  signal(name: NodeJS.Signals): void;
  /** The exit status (128+n for a signal death), and ms from start and from the last signal sent. */
  exited: Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    ms: number;
    afterSignalMs: number | undefined;
  }>;
}

export function watchCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Watched {
  const started = Date.now();
  let lastSignal: number | undefined;
  const child = spawn(process.execPath, [binPath, ...args], {
    env: { ...process.env, CI: 'true', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    wake();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    wake();
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exited = new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    ms: number;
    afterSignalMs: number | undefined;
  }>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      const now = Date.now();
      resolve({
        code,
        signal,
        ms: now - started,
        afterSignalMs: lastSignal === undefined ? undefined : now - lastSignal,
      });
      wake();
    });
  });
  return {
    child,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    until(pattern, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${pattern} within ${ms} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
        }, ms);
        const check = () => {
          if (pattern.test(stdout) || pattern.test(stderr)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`exited before ${pattern}\nstdout: ${stdout}\nstderr: ${stderr}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
    signal(name) {
      lastSignal = Date.now();
      child.kill(name);
    },
    exited,
  };
}
