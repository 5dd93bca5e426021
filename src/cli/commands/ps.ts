import { stateDir } from '../../core/paths.js';
import { Connection } from '../../vm/libvirt/connection.js';
import { listDevpivotDomains } from '../../vm/libvirt/inventory.js';
import { formatUptime, resolveTarget } from '../../vm/targets.js';
import { type Command, connectOption } from '../command.js';

export const command: Command = {
  name: 'ps',
  summary: "List devpivot's VMs (every session, or one)",
  usage: '[--session ID] [--json] [--connect URI]',
  description:
    'List the libvirt domains devpivot created for this user (found by their devpivot metadata; other domains,\n' +
    "and on a shared daemon such as qemu:///system other users' devpivot domains, are never shown):\n" +
    'name, session, node, state, uptime and base image (--json also: the ssh forward, 127.0.0.1:PORT).',
  options: {
    session: { type: 'string', valueName: 'ID', description: 'Only this session' },
    json: { type: 'boolean', description: 'Print a JSON array' },
    connect: connectOption('LIBVIRT_DEFAULT_URI, else the last session’s, else qemu:///system for root'),
  },
  async run({ args, stdout, env }) {
    const target = await resolveTarget({ connect: args.string('connect'), env, stateDir: stateDir(env) });
    const conn = await Connection.open(target.uri);
    try {
      const only = args.string('session');
      const now = Date.now();
      const rows = (await listDevpivotDomains(conn))
        .filter((d) => d.own && (!only || d.session === only))
        .map((d) => ({
          name: d.name,
          session: d.session,
          node: d.node,
          state: d.state,
          uptime: d.started ? formatUptime(now - Date.parse(d.started)) : '-',
          startedAt: d.started ?? null,
          image: d.image,
          ssh: d.ssh ?? null,
        }));
      if (args.flag('json')) {
        stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
        return 0;
      }
      if (rows.length === 0) {
        stdout.write(`no devpivot VMs on ${target.uri}\n`);
        return 0;
      }
      const header = {
        name: 'NAME',
        session: 'SESSION',
        node: 'NODE',
        state: 'STATE',
        uptime: 'UPTIME',
        image: 'IMAGE',
      };
      const keys = ['name', 'session', 'node', 'state', 'uptime', 'image'] as const;
      const table = [header, ...rows];
      const widths = keys.map((key) => Math.max(...table.map((row) => String(row[key]).length)));
      for (const row of table) {
        stdout.write(
          `${keys
            .map((key, i) => String(row[key]).padEnd(widths[i]!))
            .join('  ')
            .trimEnd()}\n`,
        );
      }
      return 0;
    } finally {
      await conn.close();
    }
  },
};
