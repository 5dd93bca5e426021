/**
 * An unprivileged user for the tests that run devpivot as a normal user: created once (idempotently) by the test
 * set-up, in the libvirt group, with a private HOME per test under /tmp, and a checkout of devpivot it can read.
 * The test process must be root (CI is): it creates the user and runs commands as it with runuser.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './cli.js';

export const TEST_USER = 'devpivot-rootless-test';
/** Debian's PATH for a normal user (/etc/login.defs ENV_PATH): no sbin directories. */
export const USER_PATH = '/usr/local/bin:/usr/bin:/bin';

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
}

function id(args: string[]): string | undefined {
  const result = spawnSync('id', args, { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The test user, created if missing (no login shell), and made a member of the libvirt group. */
export function ensureTestUser(name = TEST_USER): TestUser {
  if (process.getuid?.() !== 0)
    throw new Error(`this test creates the unprivileged user ${name} and runs as it: run it as root (CI does)`);
  if (spawnSync('getent', ['group', 'libvirt']).status !== 0)
    throw new Error('no libvirt group: install libvirt-daemon-system (npm run setup does)');
  if (id(['-u', name]) === undefined)
    execFileSync('useradd', ['--no-create-home', '--user-group', '--shell', '/usr/sbin/nologin', name]);
  if (!(id(['-Gn', name]) ?? '').split(' ').includes('libvirt')) execFileSync('usermod', ['-aG', 'libvirt', name]);
  return { name, uid: Number(id(['-u', name])), gid: Number(id(['-g', name])) };
}

/** A fresh HOME owned by the user (0700), removed by the returned function. */
export function privateHome(user: TestUser): { home: string; remove: () => void } {
  const home = mkdtempSync(join(tmpdir(), 'devpivot-rootless-home-'));
  chownSync(home, user.uid, user.gid);
  chmodSync(home, 0o700);
  return { home, remove: () => rmSync(home, { recursive: true, force: true }) };
}

/** Whether `user` can read `path` (and traverse every directory on the way). */
export function canRead(user: TestUser, path: string): boolean {
  return spawnSync('runuser', ['-u', user.name, '--', 'test', '-r', path]).status === 0;
}

/**
 * A devpivot checkout the user can read: this one when every directory on the way is traversable for them (a
 * clone under /root is not), else a copy of what running needs (bin, dist, node_modules, images, scenarios,
 * scripts, package files; ~200 MB, mtimes kept so the set-up sees it built) in a world-readable directory
 * under /tmp. Ends in '/'.
 */
export function readableCheckout(user: TestUser): { repo: string; copied: boolean; remove: () => void } {
  if (!canRead(user, process.execPath))
    throw new Error(
      `${user.name} cannot read node at ${process.execPath}: install Node.js where every user can run it`,
    );
  const probe = join(repoRoot, 'node_modules', 'koffi', 'package.json');
  if (canRead(user, probe) && canRead(user, join(repoRoot, 'dist', 'src', 'cli', 'main.js')))
    return { repo: repoRoot, copied: false, remove: () => {} };
  const dir = mkdtempSync(join(tmpdir(), 'devpivot-rootless-repo-'));
  chmodSync(dir, 0o755);
  for (const entry of [
    'bin',
    'dist',
    'node_modules',
    'images',
    'scenarios',
    'scripts',
    'package.json',
    'package-lock.json',
    'tsconfig.json',
  ])
    cpSync(join(repoRoot, entry), join(dir, entry), {
      recursive: true,
      preserveTimestamps: true,
      verbatimSymlinks: true,
    });
  for (const source of ['src', 'test', 'bench']) mkdirSync(join(dir, source), { mode: 0o755 });
  return { repo: `${dir}/`, copied: true, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Run a command as the user with only `env` (plus HOME's default PATH), returning its output and status. */
export function runAsUser(
  user: TestUser,
  env: NodeJS.ProcessEnv,
  file: string,
  args: string[],
  options: { cwd?: string; timeoutMs?: number } = {},
): { status: number | null; stdout: string; stderr: string } {
  const pairs = Object.entries({ PATH: USER_PATH, ...env }).map(([key, value]) => `${key}=${value}`);
  const result = spawnSync('runuser', ['-u', user.name, '--', 'env', '-i', ...pairs, file, ...args], {
    encoding: 'utf8',
    cwd: options.cwd,
    timeout: options.timeoutMs ?? 60_000,
  });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}
