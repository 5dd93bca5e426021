import { UsageError } from '../../core/errors.js';
import { stateDir } from '../../core/paths.js';
import { Connection } from '../../vm/libvirt/connection.js';
import { attachConsole } from '../../vm/libvirt/console-attach.js';
import { assertValidSessionId } from '../../vm/sessions.js';
import { resolveTarget } from '../../vm/targets.js';
import { type Command, connectOption } from '../command.js';

export const command: Command = {
  name: 'console',
  summary: "Attach to a node's serial console (Ctrl-] detaches)",
  usage: 'NODE [--session ID] [--force] [--connect URI]',
  description:
    'Connect this terminal to the serial console of NODE (of the last session, or --session ID) through libvirt,\n' +
    'so it works for remote URIs too. Ctrl-] detaches. While a devpivot run watches the node, its console is in\n' +
    'use: follow it with `devpivot logs NODE -f`, or take it over with --force (the run re-attaches when you detach).',
  options: {
    session: { type: 'string', valueName: 'ID', description: 'Session of the node (default: the last one)' },
    force: { type: 'boolean', short: 'f', description: 'Take the console over from another reader' },
    connect: connectOption('LIBVIRT_DEFAULT_URI, else the session’s, else qemu:///system for root'),
  },
  positionals: [1, 1],
  async run({ args, stderr, stdout, env, signal }) {
    const node = args.positionals[0]!;
    const sessionId = args.string('session');
    if (sessionId) assertValidSessionId(sessionId);
    const target = await resolveTarget({
      connect: args.string('connect'),
      session: sessionId,
      env,
      stateDir: stateDir(env),
    });
    if (!target.session)
      throw new UsageError('no devpivot session is recorded on this machine', 'pass --session ID (see `devpivot ps`)');
    const conn = await Connection.open(target.uri);
    try {
      stderr.write(`Connected to ${node} (session ${target.session.id}). Escape character is ^] (Ctrl-]).\n`);
      const why = await attachConsole(
        conn,
        target.session.id,
        node,
        { input: process.stdin, output: stdout, signal },
        { force: args.flag('force') },
      );
      stderr.write(why === 'ended' ? `\nConsole of ${node} closed (the VM stopped).\n` : '\nDetached.\n');
      // stdin was put in flowing mode for the session: release it so the process can exit
      process.stdin.destroy();
      return 0;
    } finally {
      await conn.close();
    }
  },
};
