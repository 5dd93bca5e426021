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
  if (uid === 0) return SYSTEM_CACHE_DIR;
  return join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'devpivot');
}

/** root's cache: every user's shared, read-only source of a fixture already built there. */
export const SYSTEM_CACHE_DIR = '/var/cache/devpivot';

/**
 * The cache read before rebuilding anything the user's own cache lacks: DEVPIVOT_SHARED_CACHE_DIR, else root's
 * (/var/cache/devpivot) for a user on their default cache; none when it is the user's own cache, or when
 * DEVPIVOT_CACHE_DIR names a cache explicitly (that cache alone, as asked).
 */
export function sharedCacheDir(
  env: NodeJS.ProcessEnv = process.env,
  uid = process.getuid?.() ?? 0,
): string | undefined {
  const shared = env.DEVPIVOT_SHARED_CACHE_DIR ?? (uid === 0 || env.DEVPIVOT_CACHE_DIR ? undefined : SYSTEM_CACHE_DIR);
  return shared && shared !== cacheDir(env, uid) ? shared : undefined;
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
