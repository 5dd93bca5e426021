import { existsSync } from 'node:fs';
import { libvirtUri } from '../core/paths.js';
import { consoleLogPath, listSessions, type SessionRecord } from './sessions.js';

/**
 * Which libvirt URI and session a command such as `ps`, `down`, `console` or `logs` acts on: `--connect` wins,
 * then LIBVIRT_DEFAULT_URI, then the URI the chosen session was recorded with, then the default for this user.
 */
export interface Target {
  uri: string;
  /** The session chosen with --session, or the most recent recorded one. */
  session: SessionRecord | undefined;
}

export async function resolveTarget(options: {
  connect?: string;
  session?: string;
  env: NodeJS.ProcessEnv;
  stateDir: string;
}): Promise<Target> {
  const sessions = await listSessions(options.stateDir);
  const session = options.session
    ? (sessions.find((s) => s.id === options.session) ?? {
        id: options.session,
        uri: libvirtUri(undefined, options.env),
        startedAt: '',
        pid: 0,
      })
    : sessions[0];
  const uri = options.connect ?? options.env.LIBVIRT_DEFAULT_URI ?? session?.uri ?? libvirtUri(undefined, options.env);
  return { uri, session };
}

/** The newest session that has a console log for `node` (for `devpivot logs NODE` without --session). */
export async function sessionWithLog(stateDirectory: string, node: string): Promise<SessionRecord | undefined> {
  for (const session of await listSessions(stateDirectory)) {
    if (existsSync(consoleLogPath(stateDirectory, session.id, node))) return session;
  }
  return undefined;
}

/** How long something has run, to the two largest units: "3m12s", "2h05m", "4d03h" (`devpivot ps` UPTIME). */
export function formatUptime(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}
