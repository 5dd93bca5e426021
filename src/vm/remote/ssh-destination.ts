/**
 * Where a `qemu+ssh://` libvirt URI logs in, as ssh(1) arguments: libvirt's ssh transport runs the `ssh` binary
 * with the URI's port, user and the `keyfile` extra parameter, and `no_verify=1` turns host key checking off
 * (libvirt's remote URI documentation, "Extra parameters"). devpivot opens its own ssh connections to the same host
 * with the same arguments, so a login that works for libvirt works for the tunnel.
 */
import { DevpivotError } from '../../core/errors.js';

export interface SshDestination {
  host: string;
  user?: string;
  port?: number;
  keyfile?: string;
  /** `no_verify=1`: accept any host key (libvirt passes StrictHostKeyChecking=no). */
  noVerify: boolean;
}

/** The destination of a `qemu+ssh://` URI; undefined for any other transport (local, unix, tcp, tls). */
export function sshDestinationOf(uri: string): SshDestination | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (!/^[a-z0-9]+\+ssh:$/.test(url.protocol) || url.hostname === '') return undefined;
  // ssh would read a host (or user) starting with `-` as an option: `qemu+ssh://-oProxyCommand=…` runs a command.
  if (/^-/.test(decodeURIComponent(url.hostname)) || /^-/.test(decodeURIComponent(url.username)))
    throw new DevpivotError('REMOTE_HOST_INVALID', `${uri}: an ssh host or user must not start with '-'`);
  const keyfile = url.searchParams.get('keyfile') ?? undefined;
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    ...(url.username ? { user: decodeURIComponent(url.username) } : {}),
    ...(url.port ? { port: Number(url.port) } : {}),
    ...(keyfile ? { keyfile } : {}),
    noVerify: url.searchParams.get('no_verify') === '1',
  };
}

/** ssh(1) options for the destination (before the host argument), never prompting. */
export function sshOptionsOf(destination: SshDestination): string[] {
  return [
    '-o',
    'BatchMode=yes',
    ...(destination.port !== undefined ? ['-p', String(destination.port)] : []),
    ...(destination.user !== undefined ? ['-l', destination.user] : []),
    ...(destination.keyfile !== undefined ? ['-i', destination.keyfile, '-o', 'IdentitiesOnly=yes'] : []),
    // Unlike libvirt, which then records the key in ~/.ssh/known_hosts, devpivot neither checks nor records it.
    ...(destination.noVerify ? ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null'] : []),
  ];
}
