import { UsageError } from '../../core/errors.js';
import { stateDir } from '../../core/paths.js';
import { Connection } from '../../vm/libvirt/connection.js';
import { cleanup, listDevpivotDomains } from '../../vm/libvirt/inventory.js';
import { parseAge, pruneSessions } from '../../vm/session-prune.js';
import { assertValidSessionId, listSessions } from '../../vm/sessions.js';
import { resolveTarget } from '../../vm/targets.js';
import { type Command, type CommandContext, connectOption } from '../command.js';
import { keeperOf, stopKeeper } from '../keep.js';

/** `down --prune`: the caller's stale session directories, never a session that still has domains or a keeper. */
async function prune({ args, stdout, env }: CommandContext): Promise<number> {
  const others = [
    args.flag('all') && 'all',
    args.string('session') !== undefined && 'session',
    args.flag('images') && 'images',
  ];
  const other = others.find(Boolean);
  if (other)
    throw new UsageError(`--prune and --${other} exclude each other`, '--prune removes session directories only');
  const age = args.string('older-than') ?? '7d';
  const olderThanMs = parseAge(age);
  if (olderThanMs === undefined)
    throw new UsageError(
      `invalid --older-than '${age}'`,
      'give whole seconds, minutes, hours or days: 90s, 30m, 12h, 7d',
    );
  const state = stateDir(env);
  const target = await resolveTarget({ connect: args.string('connect'), env, stateDir: state });
  const records = new Map((await listSessions(state)).map((record) => [record.id, record]));
  const conn = await Connection.open(target.uri);
  try {
    const withDomains = new Set((await listDevpivotDomains(conn)).map((domain) => domain.session));
    const report = await pruneSessions(state, {
      olderThanMs,
      async inUse(id) {
        if (withDomains.has(id)) return `its domains still exist on ${target.uri}`;
        if ((await keeperOf(state, id)) !== undefined) return 'a devpivot --keep still serves it';
        const uri = records.get(id)?.uri;
        if (uri !== undefined && uri !== target.uri) return `recorded for ${uri} (prune with --connect ${uri})`;
        return undefined;
      },
    });
    if (args.flag('json')) stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else {
      for (const id of report.removed) stdout.write(`removed session directory ${id}\n`);
      for (const { id, reason } of report.left) stdout.write(`left session ${id}: ${reason}\n`);
      if (report.removed.length === 0) stdout.write(`no session directory untouched for ${age} to remove\n`);
    }
    return 0;
  } finally {
    await conn.close();
  }
}

export const command: Command = {
  name: 'down',
  summary: "Remove devpivot's VMs and volumes (last session, one session, or all)",
  usage: '[--all | --session ID] [--images] [--json] [--connect URI] | --prune [--older-than AGE]',
  description:
    'Destroy and undefine the domains that carry devpivot metadata and delete their volumes from the devpivot\n' +
    'storage pool: those of the last session by default, of one session with --session, or of every session\n' +
    "with --all. Nothing without devpivot metadata, and no other user's devpivot VM, is ever touched. --images\n" +
    '(with --all) also deletes the cached base image volumes no remaining VM uses.\n' +
    '--prune removes only session directories of the state directory (records, console logs, keys): the\n' +
    "caller's own, untouched for --older-than (default 7d), whose session has no domain on the URI and no\n" +
    'keeper serving it; a session recorded for another URI is left (prune it with --connect that URI).',
  options: {
    all: { type: 'boolean', short: 'a', description: 'Every devpivot session on this libvirt URI' },
    session: { type: 'string', valueName: 'ID', description: 'This session (default: the last one)' },
    images: { type: 'boolean', description: 'With --all: also delete unused cached base images' },
    json: { type: 'boolean', description: 'Print {domains, volumes, errors} as JSON' },
    prune: { type: 'boolean', description: 'Remove stale session directories (see --older-than), nothing else' },
    'older-than': {
      type: 'string',
      valueName: 'AGE',
      description: 'With --prune: untouched this long (90s, 30m, 12h, 7d)',
    },
    connect: connectOption('LIBVIRT_DEFAULT_URI, else the session’s, else qemu:///system for root'),
  },
  async run(context) {
    const { args, stdout, stderr, env } = context;
    if (args.flag('prune')) return prune(context);
    if (args.string('older-than') !== undefined)
      throw new UsageError('--older-than needs --prune', 'devpivot down --prune --older-than 7d');
    const all = args.flag('all');
    const sessionId = args.string('session');
    if (all && sessionId) throw new UsageError('--all and --session exclude each other', 'pick one');
    if (args.flag('images') && !all)
      throw new UsageError(
        '--images needs --all',
        'base images are shared by sessions: use `devpivot down --all --images`',
      );
    if (sessionId) assertValidSessionId(sessionId);
    const target = await resolveTarget({
      connect: args.string('connect'),
      session: sessionId,
      env,
      stateDir: stateDir(env),
    });
    if (!all && !target.session)
      throw new UsageError(
        'no devpivot session is recorded on this machine',
        'use --all, or --session ID (see `devpivot ps`)',
      );
    // A `--keep` run serving this session: it removes its VMs and stops its registry itself, then exits.
    const state = stateDir(env);
    const ids = all ? (await listSessions(state)).map((s) => s.id) : target.session ? [target.session.id] : [];
    for (const id of ids) {
      const pid = await keeperOf(state, id);
      if (pid === undefined) continue;
      const gone = await stopKeeper(pid, 120_000);
      stdout.write(
        `${gone ? 'stopped' : 'signalled (still running)'} the devpivot serving session ${id} (pid ${pid})\n`,
      );
    }
    const conn = await Connection.open(target.uri);
    try {
      const report = await cleanup(conn, {
        all,
        session: all ? undefined : target.session?.id,
        images: args.flag('images'),
        ownSessions: (await listSessions(state)).map((s) => s.id),
      });
      if (args.flag('json')) stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else {
        for (const name of report.domains) stdout.write(`removed domain ${name}\n`);
        for (const name of report.volumes) stdout.write(`deleted volume ${name}\n`);
        if (report.domains.length + report.volumes.length === 0) {
          const scope = all ? 'any session' : `session ${target.session?.id}`;
          stdout.write(`nothing to remove for ${scope} on ${target.uri}\n`);
        }
        for (const error of report.errors) stderr.write(`warning: ${error}\n`);
      }
      return report.errors.length > 0 ? 1 : 0;
    } finally {
      await conn.close();
    }
  },
};
