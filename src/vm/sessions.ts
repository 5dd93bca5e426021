import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '../core/errors.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, privateDir } from '../core/private-dir.js';
import { validName } from './domain-xml.js';

/**
 * A session is one devpivot run against one libvirt URI: every domain and volume it creates carries its id.
 * Records live in `<stateDir>/sessions/<id>/session.json`, next to the nodes' console logs, so `ps`, `down`,
 * `logs` and `console` know the last session without asking the user.
 */
export interface SessionRecord {
  id: string;
  uri: string;
  startedAt: string;
  pid: number;
}

export function newSessionId(): string {
  return randomBytes(4).toString('hex');
}

export function assertValidSessionId(id: string): void {
  if (!validName(id))
    throw new UsageError(
      `invalid session id '${id}'`,
      'use lower-case letters, digits and single dashes (at most 40 characters), e.g. "ci-42"',
    );
}

export function sessionsDir(stateDirectory: string): string {
  return join(stateDirectory, 'sessions');
}

export function sessionDir(stateDirectory: string, id: string): string {
  return join(sessionsDir(stateDirectory), id);
}

/** devpivot's own, canonical console log of a node (what `devpivot logs` prints). */
export function consoleLogPath(stateDirectory: string, sessionId: string, node: string): string {
  return join(sessionDir(stateDirectory, sessionId), `${node}.console.log`);
}

export async function recordSession(stateDirectory: string, record: SessionRecord): Promise<void> {
  // The state directory and a session's records are the caller's alone (0700, files 0600).
  await privateDir(stateDirectory);
  const dir = sessionDir(stateDirectory, record.id);
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  await writeFile(join(dir, 'session.json'), `${JSON.stringify(record, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
}

/** Every recorded session, newest first. Unreadable records are skipped. */
export async function listSessions(stateDirectory: string): Promise<SessionRecord[]> {
  let names: string[];
  try {
    names = await readdir(sessionsDir(stateDirectory));
  } catch {
    return [];
  }
  const records: SessionRecord[] = [];
  for (const name of names) {
    try {
      const record = JSON.parse(await readFile(join(sessionsDir(stateDirectory), name, 'session.json'), 'utf8'));
      if (record && typeof record.id === 'string' && typeof record.uri === 'string') records.push(record);
    } catch {}
  }
  return records.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
}

export async function lastSession(stateDirectory: string): Promise<SessionRecord | undefined> {
  return (await listSessions(stateDirectory))[0];
}
