import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository root (tests run from dist/test/...). */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const binPath = `${repoRoot}bin/devpivot.js`;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run the real CLI as a separate process, as a user would. */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, ...args], {
      env: { ...process.env, ...options.env },
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`devpivot ${args.join(' ')} did not finish in ${options.timeoutMs ?? 60_000} ms`));
    }, options.timeoutMs ?? 60_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
