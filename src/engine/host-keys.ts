/**
 * A node's ssh host keys, made on this host before the node boots and handed to it by Ignition: the three types
 * RHCOS's `sshd-keygen@.service` would make on first boot (rsa, ecdsa, ed25519, ssh-keygen's default sizes). With
 * the keys in `/etc/ssh` that unit's `ConditionFileNotEmpty=|!/etc/ssh/ssh_host_%i_key` skips it, as on any RHCOS
 * node provisioned with host keys, and devpivot knows each node's keys before first contact: its ssh pins them
 * instead of trusting whatever answers first. (Under TCG the guest's RSA key alone costs 5–17 s of CPU on its first
 * boot; here it is one native ssh-keygen run.)
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevpivotError, ExitCode } from '../core/errors.js';
import { run } from '../core/exec.js';

export const HOST_KEY_TYPES = ['rsa', 'ecdsa', 'ed25519'] as const;
export type HostKeyType = (typeof HOST_KEY_TYPES)[number];

export interface HostKey {
  type: HostKeyType;
  /** The private key file's text (OpenSSH format), as ssh-keygen wrote it. */
  privateKey: string;
  /** `ssh-ed25519 AAAA…`: the algorithm and the key, no comment. */
  publicKey: string;
}

/** Where sshd reads each key (the paths sshd-keygen@.service writes). */
export function hostKeyPath(type: HostKeyType): string {
  return `/etc/ssh/ssh_host_${type}_key`;
}

/**
 * One node's host keys, all types made in parallel in a private temporary directory that is removed before this
 * returns: the private keys live on only in the node's Ignition config (private to the caller, as the pull secret).
 * `tempParent`: where that directory is made (default: the system's temporary directory). `signal` stops the
 * ssh-keygen runs at once (an RSA key takes seconds on a loaded host; Ctrl-C must not wait for it).
 */
export async function makeHostKeys(tempParent = tmpdir(), signal?: AbortSignal): Promise<HostKey[]> {
  const dir = await mkdtemp(join(tempParent, 'devpivot-hostkeys-'));
  try {
    return await Promise.all(
      HOST_KEY_TYPES.map(async (type) => {
        const file = join(dir, `ssh_host_${type}_key`);
        const result = await run('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', '', '-f', file], {
          timeoutMs: 60_000,
          signal,
        });
        signal?.throwIfAborted();
        if (result.spawnError)
          throw new DevpivotError('SSH_MISSING', `cannot run ssh-keygen: ${result.spawnError.message}`, {
            exitCode: ExitCode.usage,
          });
        if (result.code !== 0)
          throw new DevpivotError(
            'SSH_KEYGEN_FAILED',
            `ssh-keygen -t ${type} failed: ${result.all.trim() || `exit ${result.code}`}`,
            { exitCode: ExitCode.usage },
          );
        const [algorithm, key] = (await readFile(`${file}.pub`, 'utf8')).trim().split(/\s+/);
        return { type, privateKey: await readFile(file, 'utf8'), publicKey: `${algorithm} ${key}` };
      }),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Whether a user's own Ignition config writes a host key (a file under /etc/ssh named ssh_host_*): its keys then
 * replace devpivot's when merged, so devpivot neither writes nor pins any for that node.
 */
export function writesHostKeys(extra: object | undefined): boolean {
  const files = (extra as { storage?: { files?: unknown } } | undefined)?.storage?.files;
  if (!Array.isArray(files)) return false;
  return files.some((file) => {
    const path = (file as { path?: unknown })?.path;
    return typeof path === 'string' && /^\/etc\/ssh\/ssh_host_[^/]*$/.test(path);
  });
}
