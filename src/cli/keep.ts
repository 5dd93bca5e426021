/**
 * `--keep`: at the end of a run, the VMs stay, and so do the registry they pull from and the console logging
 * (`devpivot logs -f` keeps growing): the process stays in the foreground serving them until Ctrl-C or SIGTERM,
 * then removes the VMs and exits with the run's status. `devpivot down` of that session stops it the same way:
 * the serving process leaves `keeper.json` (its pid) in the session's directory while it serves.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../core/private-dir.js';
import type { KeptRun } from '../engine/engine.js';
import { sessionDir } from '../vm/sessions.js';
import type { CommandContext } from './command.js';
import { handOffRemoval } from './handoff.js';

interface Keeper {
  pid: number;
  since: string;
  /** The keeper's start time in clock ticks since boot (/proc/PID/stat field 22): a recycled pid has another. */
  startTime?: string;
}

/** A process's start time (/proc/PID/stat field 22), or undefined when it is gone. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function keeperFile(state: string, sessionId: string): string {
  return join(sessionDir(state, sessionId), 'keeper.json');
}

/** Serve a kept run until a signal (or `devpivot down`), then remove its VMs and stop its registry. */
export async function serveKept(kept: KeptRun, context: CommandContext, state: string): Promise<void> {
  const nodes = kept.nodes.map((node) => `${node.name} (${node.domain})`).join(', ') || 'no nodes';
  const registry = kept.registryUrl ? `registry at ${kept.registryUrl}` : 'no registry';
  context.stderr.write(
    `kept: ${nodes}; ${registry}; session ${kept.sessionId}. Ctrl-C to stop and clean up (or: devpivot down --session ${kept.sessionId})\n`,
  );
  const file = keeperFile(state, kept.sessionId);
  await mkdir(join(file, '..'), { recursive: true, mode: PRIVATE_DIR_MODE });
  await writeFile(
    file,
    `${JSON.stringify({ pid: process.pid, since: new Date().toISOString(), startTime: startTimeOf(process.pid) } satisfies Keeper)}\n`,
    { mode: PRIVATE_FILE_MODE },
  );
  try {
    if (context.interrupts) {
      const serving = context.interrupts.serve();
      const onAbort = () => serving.stop();
      context.signal.addEventListener('abort', onAbort, { once: true });
      await serving.stopped;
      context.signal.removeEventListener('abort', onAbort);
    } else if (!context.signal.aborted) {
      await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
    }
    context.stderr.write(`removing the kept VMs of session ${kept.sessionId}\n`);
  } finally {
    // A signal during this removal exits at once: the removal is handed over then.
    const off = context.interrupts?.onEmergency(async () => {
      handOffRemoval(kept.sessionId, kept.uri, context.env);
    });
    await kept.release({ remove: true });
    off?.();
    await rm(file, { force: true });
  }
}

/** The pid of the process serving a kept session, if that very process is still alive. */
export async function keeperOf(state: string, sessionId: string): Promise<number | undefined> {
  let keeper: Keeper;
  try {
    keeper = JSON.parse(await readFile(keeperFile(state, sessionId), 'utf8')) as Keeper;
  } catch {
    return undefined;
  }
  if (!Number.isInteger(keeper.pid) || keeper.pid <= 1 || keeper.pid === process.pid) return undefined;
  // A recycled pid is not ours to signal: the process must be the one that wrote the file (same start time).
  const startTime = startTimeOf(keeper.pid);
  return startTime !== undefined && startTime === keeper.startTime ? keeper.pid : undefined;
}

/** Ask the keeper of a session to clean up and exit (SIGTERM); resolves once it is gone or `ms` passed. */
export async function stopKeeper(pid: number, ms: number): Promise<boolean> {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return true;
  }
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
  }
  return false;
}
