import { createReadStream, existsSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { DevpivotError } from '../../core/errors.js';
import { stateDir } from '../../core/paths.js';
import { assertValidSessionId, consoleLogPath } from '../../vm/sessions.js';
import { sessionWithLog } from '../../vm/targets.js';
import type { Command } from '../command.js';
import { untilStopped } from '../interrupts.js';

export const command: Command = {
  name: 'logs',
  summary: "Print a node's console log (-f follows it)",
  usage: 'NODE [-f] [--session ID]',
  description:
    'Print the console log devpivot keeps for NODE: every line the VM printed on its serial console, across\n' +
    'reboots, with terminal escapes removed. It is written by the devpivot process that runs the node. -f keeps\n' +
    'printing new lines until Ctrl-C. Without --session: the newest session that has a log for NODE.',
  options: {
    follow: { type: 'boolean', short: 'f', description: 'Keep printing lines as they arrive' },
    session: { type: 'string', valueName: 'ID', description: 'Session of the node (default: newest with a log)' },
  },
  positionals: [1, 1],
  async run(context) {
    const { args, stdout, env } = context;
    const node = args.positionals[0]!;
    const state = stateDir(env);
    const sessionId = args.string('session');
    if (sessionId) assertValidSessionId(sessionId);
    const session = sessionId ?? (await sessionWithLog(state, node))?.id;
    const path = session ? consoleLogPath(state, session, node) : undefined;
    if (!path || !existsSync(path))
      throw new DevpivotError(
        'CONSOLE_LOG_MISSING',
        `no console log for node ${node}${session ? ` in session ${session}` : ''}`,
        {
          hint: `nodes and sessions: \`devpivot ps\`; logs live in ${state}/sessions/<session>/<node>.console.log`,
        },
      );
    let offset = await copyFrom(path, 0, stdout);
    if (!args.flag('follow')) return 0;
    const timer = setInterval(async () => {
      try {
        const size = (await stat(path)).size;
        if (size < offset) offset = 0; // truncated or replaced: start over
        if (size > offset) offset = await copyFrom(path, offset, stdout);
      } catch {}
    }, 250);
    await untilStopped(context);
    clearInterval(timer);
    return 0;
  },
};

/** Copy the file from `start` to its current end; returns the new offset. */
async function copyFrom(path: string, start: number, out: NodeJS.WritableStream): Promise<number> {
  const handle = await open(path, 'r');
  const end = (await handle.stat()).size;
  await handle.close();
  if (end <= start) return start;
  await new Promise<void>((resolve, reject) => {
    const stream = createReadStream(path, { start, end: end - 1 });
    stream.on('error', reject);
    stream.on('end', resolve);
    stream.pipe(out, { end: false });
  });
  return end;
}
