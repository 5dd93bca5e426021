/**
 * How the fixture recipe gets the uid 0 it needs (root-owned files in the ostree commits, the sysroot and the
 * ext4 images): as real root, or as the root of a new user namespace (`unshare --map-root-user`), where the
 * caller's uid is mapped to 0 and every file the recipe makes is owned by it. The two give the same outputs
 * (images/README.md, "Building without root").
 */
import { DevpivotError } from '../core/errors.js';
import { run } from '../core/exec.js';

export type RecipeMode = 'root' | 'userns';

/**
 * True when `/proc/self/uid_map` text is the initial user namespace's (every uid mapped to itself: the single
 * line `0 0 4294967295`); a user namespace made by `unshare --map-root-user` shows `0 <uid> 1`.
 */
export function isInitialUidMap(uidMap: string): boolean {
  const lines = uidMap
    .split('\n')
    .map((line) => line.trim().split(/\s+/).join(' '))
    .filter((line) => line !== '');
  return lines.length === 1 && lines[0] === '0 0 4294967295';
}

/** The command that runs `build.sh OUT` in `mode`. */
export function recipeCommand(script: string, out: string, mode: RecipeMode): { file: string; args: string[] } {
  return mode === 'root'
    ? { file: 'bash', args: [script, out] }
    : { file: 'unshare', args: ['--map-root-user', 'bash', script, out] };
}

/** The hint of FIXTURE_NEEDS_ROOT: why the probe failed and what enables user namespaces. */
export function userNamespaceHint(probe: string): string {
  return [
    `unshare --map-root-user failed${probe ? `: ${probe}` : ''}.`,
    'Run the build as root (sudo devpivot images build), or allow unprivileged user namespaces:',
    "sysctl user.max_user_namespaces (must be > 0), kernel.unprivileged_userns_clone=1 (on kernels with Debian's",
    'patch), kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 23.10+); in a container, its seccomp profile',
    'must allow unshare(CLONE_NEWUSER).',
  ].join(' ');
}

/**
 * Root runs the recipe directly; anyone else through `unshare --map-root-user`, after a probe
 * (`unshare --map-root-user id -u` must print 0). FIXTURE_NEEDS_ROOT when the probe fails: user namespaces are
 * unavailable (disabled by sysctl, AppArmor or seccomp, or util-linux's unshare missing).
 */
export async function recipeMode(uid: number = process.getuid?.() ?? 0): Promise<RecipeMode> {
  if (uid === 0) return 'root';
  const probe = await run('unshare', ['--map-root-user', 'id', '-u'], { timeoutMs: 10_000 });
  if (probe.code === 0 && probe.stdout.trim() === '0') return 'userns';
  const why = probe.spawnError ? probe.spawnError.message : probe.stderr.trim() || `exit ${probe.code}`;
  throw new DevpivotError(
    'FIXTURE_NEEDS_ROOT',
    'building the fixture OS needs root or an unprivileged user namespace, and user namespaces are unavailable here',
    { hint: userNamespaceHint(why), exitCode: 2 },
  );
}
