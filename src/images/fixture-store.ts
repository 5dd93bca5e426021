/**
 * The fixture cache on disk: `${cacheDir()}/fixture/<key>/` per build, each complete build holding a
 * manifest.json written last. A build is made in `.tmp-<key>-<pid>` and renamed into place; the newest older
 * build is kept (a VM may be about to open its disk), older ones and dead leftovers are removed.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { run } from '../core/exec.js';
import { cacheDir } from '../core/paths.js';
import { processAlive } from '../core/process-alive.js';

/** One version of the fixture OS: an ostree commit in `Fixture.repo`; version 1 also has a bootable disk. */
export interface FixtureVersion {
  /** The os-release VERSION and ostree `version` metadata of this commit, e.g. "2". */
  version: string;
  commit: string;
  /** Bootable qcow2 of this version (only the first one has a disk; the others are reached by pivoting). */
  disk?: string;
}

/** A built fixture OS, as `loadFixture` returns it: absolute paths. */
export interface Fixture {
  /** The build directory: `${cacheDir()}/fixture/<key>`. */
  dir: string;
  key: string;
  /** Bootable qcow2 of version 1 (BIOS: SeaBIOS → GRUB → ostree deployment). */
  disk: string;
  /** Archive-mode ostree repository holding the commit of every version (refs fixture/v1, fixture/v2, ...). */
  repo: string;
  kernel: string;
  versions: FixtureVersion[];
  builtAt: string;
  buildSeconds: number;
  /** Sizes in bytes: disk.qcow2, initramfs, kernel, repo. */
  sizes: Record<string, number>;
  /** Debian package versions the build used (part of the key). */
  packages: Record<string, string>;
}

/** What manifest.json holds: the Fixture with paths relative to its directory. */
export interface Manifest {
  schema: 1;
  key: string;
  kernel: string;
  packages: Record<string, string>;
  builtAt: string;
  buildSeconds: number;
  disk: string;
  repo: string;
  versions: FixtureVersion[];
  sizes: Record<string, number>;
}

export const MANIFEST = 'manifest.json';
const LOCK = '.build.lock';

export function fixtureRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'fixture');
}

export function lockPath(root: string): string {
  return join(root, LOCK);
}

/** A scratch directory for building `key` in this process (renamed into place by `install`). */
export function tempBuildDir(root: string, key: string): string {
  return join(root, `.tmp-${key}-${process.pid}`);
}

function fromManifest(dir: string, manifest: Manifest): Fixture {
  return {
    dir,
    key: manifest.key,
    disk: join(dir, manifest.disk),
    repo: join(dir, manifest.repo),
    kernel: manifest.kernel,
    versions: manifest.versions.map((entry) => ({ ...entry, ...(entry.disk ? { disk: join(dir, entry.disk) } : {}) })),
    builtAt: manifest.builtAt,
    buildSeconds: manifest.buildSeconds,
    sizes: manifest.sizes,
    packages: manifest.packages,
  };
}

export async function readManifest(dir: string): Promise<Fixture> {
  const manifest = JSON.parse(await readFile(join(dir, MANIFEST), 'utf8')) as Manifest;
  return fromManifest(dir, manifest);
}

/** Write the manifest (the mark of a complete build) into `temp`, then rename `temp` to `dir` atomically. */
export async function install(root: string, temp: string, dir: string, manifest: Manifest): Promise<void> {
  await writeFile(join(temp, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o644 });
  await chmod(temp, 0o755);
  const old = join(root, `.old-${manifest.key}-${process.pid}`);
  if (existsSync(dir)) await rename(dir, old);
  await rename(temp, dir);
  await removeTree(old);
}

/** Names of the complete builds under `root`. */
export async function completeBuilds(root: string): Promise<string[]> {
  try {
    const names = await readdir(root);
    return names.filter((name) => !name.startsWith('.') && existsSync(join(root, name, MANIFEST)));
  } catch {
    return [];
  }
}

/**
 * Directories on the way to `path` that another user (libvirt-qemu, which runs QEMU under qemu:///system)
 * cannot traverse, and whether the file itself is world-readable. Empty list: readable.
 */
export async function unreadableForOthers(path: string): Promise<string[]> {
  const problems: string[] = [];
  const info = await stat(path);
  if (!(info.mode & 0o004)) problems.push(`${path} (mode ${(info.mode & 0o777).toString(8)})`);
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const mode = (await stat(dir)).mode;
    if (!(mode & 0o001)) problems.push(`${dir} (mode ${(mode & 0o777).toString(8)})`);
    if (dir === dirname(dir)) break;
  }
  return problems;
}

/** Create `dir` and its missing parents with mode 0755 regardless of the umask (QEMU must reach the disk). */
export async function mkdirTraversable(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let current = dir; !existsSync(current); current = dirname(current)) missing.unshift(current);
  await mkdir(dir, { recursive: true });
  for (const created of missing) await chmod(created, 0o755);
}

/** Remove a directory ostree may have marked immutable (deployment roots carry chattr +i). */
export async function removeTree(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  await run('chattr', ['-R', '-i', dir], { timeoutMs: 60_000 });
  await rm(dir, { recursive: true, force: true });
}

/**
 * Remove leftovers of interrupted builds and builds for other keys, except the newest of those: a test or VM
 * started just before this build may still be about to open its disk (a running QEMU keeps its open file).
 */
export async function removeStale(root: string, keep: string): Promise<void> {
  const previous: Array<{ name: string; mtime: number }> = [];
  for (const name of await readdir(root)) {
    if (name === keep || name === LOCK) continue;
    const leftover = /^\.(tmp|old)-[0-9a-f]+-(\d+)$/.exec(name);
    if (leftover) {
      if (!processAlive(Number(leftover[2]))) await removeTree(join(root, name));
      continue;
    }
    if (name.startsWith('.')) continue;
    const manifest = join(root, name, MANIFEST);
    previous.push({ name, mtime: existsSync(manifest) ? (await stat(manifest)).mtimeMs : 0 });
  }
  previous.sort((a, b) => b.mtime - a.mtime);
  for (const { name } of previous.slice(1)) await removeTree(join(root, name));
}
