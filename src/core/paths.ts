import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where devpivot keeps per-machine state: registry storage, console logs, run records. */
export function stateDir(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.() ?? 0): string {
  if (env.DEVPIVOT_STATE_DIR) return env.DEVPIVOT_STATE_DIR;
  if (uid === 0) return '/var/lib/devpivot';
  return join(env.XDG_STATE_HOME ?? join(homedir(), '.local', 'state'), 'devpivot');
}

/** Where rebuildable artefacts go: fixture images, built oscontainers. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.() ?? 0): string {
  if (env.DEVPIVOT_CACHE_DIR) return env.DEVPIVOT_CACHE_DIR;
  if (uid === 0) return '/var/cache/devpivot';
  return join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'devpivot');
}

/**
 * The libvirt connection URI: `--connect`, then LIBVIRT_DEFAULT_URI, then the system daemon for root and the
 * session daemon for everyone else (what virsh does).
 */
export function libvirtUri(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  uid = process.getuid?.() ?? 0,
): string {
  if (flag) return flag;
  if (env.LIBVIRT_DEFAULT_URI) return env.LIBVIRT_DEFAULT_URI;
  return uid === 0 ? 'qemu:///system' : 'qemu:///session';
}
