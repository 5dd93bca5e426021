/**
 * Test helper: a stand-in for a tool that does not finish within a test (a loaded host's RSA keygen, a large tree's
 * export), to check that stopping the work ends the tool instead of waiting for it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp.js';

/** A directory holding TOOL as a script that sleeps for 30 s. */
export function slowTool(tool: string): string {
  const bin = tempDir('devpivot-slow-');
  writeFileSync(join(bin, tool), '#!/bin/sh\nexec sleep 30\n', { mode: 0o755 });
  return bin;
}

/** A signal that aborts after `ms` with the reason a Ctrl-C gives (`interrupted by SIGINT`). */
export function stopSoon(ms = 200): AbortSignal {
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error('interrupted by SIGINT')), ms);
  return controller.signal;
}

/** Run `body` with `dir` first on this process's PATH, restored after (the tests that use it run serially). */
export async function withPathFirst<T>(dir: string, body: () => Promise<T>): Promise<T> {
  const path = process.env.PATH;
  process.env.PATH = `${dir}:${path}`;
  try {
    return await body();
  } finally {
    process.env.PATH = path;
  }
}
