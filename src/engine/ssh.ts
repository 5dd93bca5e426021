/**
 * ssh to a session's nodes: a per-session ed25519 key pair, whose public half every node's Ignition gives the
 * `core` user (`passwd.users`, as the MCO does on RHCOS), a per-session known_hosts file, and the ssh client
 * invocation `devpivot ssh`, the `ssh` step and the `pivot` step share. Nodes are reached on the loopback port that
 * their domain forwards to the guest's port 22 (docs/ARCHITECTURE.md "## Guest network").
 */
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DevpivotError, ExitCode } from '../core/errors.js';
import { run, startProcess } from '../core/exec.js';
import { SSH_FAILED, type SshResult } from '../steps/runtime.js';
import { shellQuote } from '../vm/remote/remote-command.js';
import { type SshDestination, sshOptionsOf } from '../vm/remote/ssh-destination.js';
import { sessionDir } from '../vm/sessions.js';

export { SSH_FAILED } from '../steps/runtime.js';

/** The user devpivot logs in as: RHCOS's and FCOS's, created by Ignition from the node's `passwd` section. */
export const SSH_USER = 'core';

export interface SessionKey {
  /** The private key file (mode 0600). */
  readonly key: string;
  /** `ssh-ed25519 AAAA… devpivot-<session>`. */
  readonly publicKey: string;
  /** Host keys of the session's nodes, by node (HostKeyAlias = the domain name). */
  readonly knownHosts: string;
}

/** `<stateDir>/sessions/<id>/ssh`: removed with the session. */
export function sessionSshDir(stateDir: string, sessionId: string): string {
  return join(sessionDir(stateDir, sessionId), 'ssh');
}

function paths(stateDir: string, sessionId: string) {
  const dir = sessionSshDir(stateDir, sessionId);
  return { dir, key: join(dir, 'id_ed25519'), knownHosts: join(dir, 'known_hosts') };
}

/**
 * The session's key pair, generated with `ssh-keygen` the first time. A run creates its nodes afresh, so host keys an
 * earlier run of this session id learnt are forgotten here; each node's is learnt again at first contact.
 */
export async function ensureSessionKey(stateDir: string, sessionId: string): Promise<SessionKey> {
  const existing = await readSessionKey(stateDir, sessionId);
  if (existing) {
    await rm(existing.knownHosts, { force: true });
    return existing;
  }
  const { dir, key, knownHosts } = paths(stateDir, sessionId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const result = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `devpivot-${sessionId}`, '-f', key], {
    timeoutMs: 30_000,
  });
  if (result.spawnError)
    throw new DevpivotError('SSH_MISSING', `cannot run ssh-keygen: ${result.spawnError.message}`, {
      exitCode: ExitCode.usage,
    });
  if (result.code !== 0)
    throw new DevpivotError('SSH_KEYGEN_FAILED', `ssh-keygen failed: ${result.all.trim() || `exit ${result.code}`}`, {
      exitCode: ExitCode.usage,
    });
  return { key, knownHosts, publicKey: (await readFile(`${key}.pub`, 'utf8')).trim() };
}

/** The session's key pair if devpivot made one (what `devpivot ssh` uses). */
export async function readSessionKey(stateDir: string, sessionId: string): Promise<SessionKey | undefined> {
  const { key, knownHosts } = paths(stateDir, sessionId);
  try {
    await stat(key);
    return { key, knownHosts, publicKey: (await readFile(`${key}.pub`, 'utf8')).trim() };
  } catch {
    return undefined;
  }
}

/** Remove the session's key pair and known hosts (with its VMs: nothing can log in with them any more). */
export async function removeSessionKey(stateDir: string, sessionId: string): Promise<void> {
  await rm(sessionSshDir(stateDir, sessionId), { recursive: true, force: true });
}

export interface SshTarget {
  session: SessionKey;
  /** The node's domain name: its host key is recorded under it, whatever port it is reached on. */
  alias: string;
  /** The loopback port forwarded to the node's port 22. */
  port: number;
  /**
   * The node's host keys were recorded before it booted (`pinHostKeys`): ssh accepts no other
   * (StrictHostKeyChecking=yes). Otherwise its key is learnt at first contact.
   */
  pinned?: boolean;
  /** Default: `core`. */
  user?: string;
  /** The node runs on this remote libvirt host: its port is on that host's loopback, reached through its login. */
  via?: SshDestination;
}

/**
 * The ssh command line. A node's host keys are the session's known_hosts entries under its domain name, and nowhere
 * else: the keys devpivot gave it (`pinned`: any other key is refused), or else the key learnt at first contact
 * (StrictHostKeyChecking=accept-new), a changed one then refused. The user's ssh configuration, agent and keys are
 * left out so the session key is the only one offered.
 */
export function sshArgs(target: SshTarget, options: { command?: string[]; tty?: boolean; batch?: boolean } = {}) {
  const { session, alias, port } = target;
  const args = [
    '-F',
    '/dev/null',
    '-i',
    session.key,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'IdentityAgent=none',
    '-o',
    `UserKnownHostsFile=${session.knownHosts}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    `StrictHostKeyChecking=${target.pinned ? 'yes' : 'accept-new'}`,
    '-o',
    `HostKeyAlias=${alias}`,
    '-o',
    'LogLevel=ERROR',
    '-o',
    'ConnectTimeout=10',
    '-o',
    'ServerAliveInterval=10',
    '-o',
    'ServerAliveCountMax=6',
    '-p',
    String(port),
    ...(target.via ? ['-o', `ProxyCommand=${proxyCommand(target.via)}`] : []),
  ];
  if (options.batch) args.push('-o', 'BatchMode=yes');
  if (options.tty === true) args.push('-t');
  if (options.tty === false) args.push('-T');
  // `--` before the destination: after it ssh reads no option, so the command follows the destination as is.
  args.push('--', `${target.user ?? SSH_USER}@127.0.0.1`, ...(options.command ?? []));
  return args;
}

/**
 * ssh to the remote host with the URI's login, relaying stdin/stdout to 127.0.0.1:PORT there (`-W`, ssh(1)); ssh
 * runs ProxyCommand with the user's shell and expands `%` tokens in it (ssh_config(5)), hence the quoting.
 */
function proxyCommand(via: SshDestination): string {
  const words = ['ssh', ...sshOptionsOf(via), '-W', '%h:%p', '--', via.host];
  return words.map((word) => (word === '%h:%p' ? word : shellQuote(word).replace(/%/g, '%%'))).join(' ');
}

/**
 * Run `command` (a shell command line, run by the user's login shell on the node) and capture its output. Never
 * throws for the command's own failure: `code` is its exit status, SSH_FAILED when ssh could not connect or log
 * in, null when it ran out of time or `signal` stopped it (then ssh is killed).
 */
export async function runOverSsh(
  target: SshTarget,
  command: string,
  options: { timeoutMs: number; input?: string; signal?: AbortSignal },
): Promise<SshResult> {
  let output = '';
  const child = startProcess('ssh', sshArgs(target, { command: [command], tty: false, batch: true }), {
    input: options.input ?? '',
    onOutput: (text) => {
      output += text;
    },
    ...(options.signal ? { signal: options.signal, abortSignal: 'SIGKILL' as const } : {}),
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs);
  const exit = await child.exited;
  clearTimeout(timer);
  if (exit.spawnError)
    throw new DevpivotError('SSH_MISSING', `cannot run ssh: ${exit.spawnError.message}`, { exitCode: ExitCode.usage });
  const stopped = timedOut || options.signal?.aborted === true;
  return { code: stopped ? null : (exit.code ?? SSH_FAILED), output };
}

/**
 * Record `publicKeys` (`ssh-ed25519 AAAA…`) as the node's host keys under `alias`, replacing any it had: the keys
 * devpivot made for it. The file is created private (0600) in the session's private directory.
 */
export async function pinHostKeys(session: SessionKey, alias: string, publicKeys: readonly string[]): Promise<void> {
  let text = '';
  try {
    text = await readFile(session.knownHosts, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const kept = text.split('\n').filter((line) => line !== '' && line.split(' ')[0] !== alias);
  const pinned = publicKeys.map((key) => `${alias} ${key.trim().split(/\s+/).slice(0, 2).join(' ')}`);
  await writeFile(session.knownHosts, `${[...kept, ...pinned].join('\n')}\n`, { mode: 0o600 });
}

/** Whether the session's known_hosts has keys for `alias` (pinned, or learnt at an earlier contact). */
export async function knowsHostKeys(session: SessionKey, alias: string): Promise<boolean> {
  try {
    return (await readFile(session.knownHosts, 'utf8')).split('\n').some((line) => line.split(' ')[0] === alias);
  } catch {
    return false;
  }
}

/** Forget the host key recorded for a node (it was created again: a new machine, new keys). */
export async function forgetHostKey(session: SessionKey, alias: string): Promise<void> {
  let text: string;
  try {
    text = await readFile(session.knownHosts, 'utf8');
  } catch {
    return;
  }
  const kept = text.split('\n').filter((line) => line !== '' && line.split(' ')[0] !== alias);
  await writeFile(session.knownHosts, kept.length > 0 ? `${kept.join('\n')}\n` : '');
}
