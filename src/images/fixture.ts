import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DevpivotError } from '../core/errors.js';
import { run } from '../core/exec.js';
import { cacheDir } from '../core/paths.js';
import { acquireLock } from './lock.js';

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
interface Manifest {
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

export interface FixtureOptions {
  env?: NodeJS.ProcessEnv;
  /** The build recipe (default: images/fixture of this package). */
  recipeDir?: string;
}

/** The recipe directory shipped with the package (`images/fixture`). */
export function defaultRecipeDir(): string {
  // dist/src/images/fixture.js and src/images/fixture.ts are both three levels below the package root.
  return fileURLToPath(new URL('../../../images/fixture/', import.meta.url)).replace(/\/$/, '');
}

function packageRoot(recipe: string): string {
  return dirname(dirname(recipe));
}

export function fixtureRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'fixture');
}

/** The Debian packages whose versions decide what the build produces. */
export function fixturePackages(kernel: string): string[] {
  return [
    `linux-image-${kernel}`,
    ...['busybox-static', 'ostree', 'skopeo', 'ignition', 'grub-pc-bin', 'grub-efi-amd64-bin', 'systemd'],
    ...['libsystemd-shared', 'systemd-sysv', 'udev', 'passwd', 'login', 'util-linux', 'mount', 'coreutils'],
    // (openssh-server, ostree-boot and libwrap0 are not installed on the host: build.sh downloads them once)
    ...['openssh-client', 'mtools', 'dosfstools'],
  ];
}

function compareVersions(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/** The kernel build.sh uses: the newest /lib/modules/<v> that has /boot/vmlinuz-<v> (FIXTURE_KERNEL overrides). */
export async function detectKernel(env: NodeJS.ProcessEnv = process.env, root = '/'): Promise<string> {
  if (env.FIXTURE_KERNEL) return env.FIXTURE_KERNEL;
  let entries: string[] = [];
  try {
    entries = await readdir(join(root, 'lib/modules'));
  } catch {
    // handled below
  }
  const found = entries
    .sort(compareVersions)
    .reverse()
    .find((v) => existsSync(join(root, 'boot', `vmlinuz-${v}`)));
  if (!found)
    throw new DevpivotError(
      'FIXTURE_NO_KERNEL',
      'no kernel for the fixture OS: no /boot/vmlinuz-<v> with /lib/modules/<v>',
      {
        hint: 'install one: apt-get install linux-image-amd64',
        exitCode: 2,
      },
    );
  return found;
}

/** Installed versions of `names` ("" when a package is missing), one dpkg-query call. */
export async function packageVersions(names: string[]): Promise<Record<string, string>> {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a dpkg-query format string, not a JS template
  const result = await run('dpkg-query', ['-W', '-f=${Package}\t${Version}\t${db:Status-Status}\n', ...names], {
    timeoutMs: 10_000,
  });
  const versions: Record<string, string> = Object.fromEntries(names.map((name) => [name, '']));
  for (const line of result.stdout.split('\n')) {
    const [name, version, status] = line.split('\t');
    if (name && name in versions && status === 'installed') versions[name] = version ?? '';
  }
  return versions;
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

/**
 * The cache key: a hash of every recipe file (path, executable bit, content), the kernel version and the
 * versions of the Debian packages the image is made of. Any change means a rebuild.
 */
export async function computeKey(recipe: string, kernel: string, packages: Record<string, string>): Promise<string> {
  const hash = createHash('sha256').update('devpivot-fixture/1\n');
  for (const file of await listFiles(recipe)) {
    const [content, info] = await Promise.all([readFile(file), stat(file)]);
    const digest = createHash('sha256').update(content).digest('hex');
    hash.update(`file ${relative(recipe, file)} ${info.mode & 0o111 ? 'x' : '-'} ${digest}\n`);
  }
  hash.update(`kernel ${kernel}\n`);
  for (const name of Object.keys(packages).sort()) hash.update(`package ${name} ${packages[name]}\n`);
  return hash.digest('hex').slice(0, 16);
}

export interface FixtureState {
  key: string;
  dir: string;
  kernel: string;
  packages: Record<string, string>;
  recipe: string;
  /** True when `dir` holds a complete build (manifest.json is written last, before the atomic rename). */
  fresh: boolean;
}

/** Where the fixture for the current recipe and packages lives, and whether it is built. */
export async function fixtureState(options: FixtureOptions = {}): Promise<FixtureState> {
  const env = options.env ?? process.env;
  const recipe = options.recipeDir ?? defaultRecipeDir();
  const kernel = await detectKernel(env);
  const packages = await packageVersions(fixturePackages(kernel));
  const key = await computeKey(recipe, kernel, packages);
  const dir = join(fixtureRoot(env), key);
  return { key, dir, kernel, packages, recipe, fresh: existsSync(join(dir, 'manifest.json')) };
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

async function readManifest(dir: string): Promise<Fixture> {
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  return fromManifest(dir, manifest);
}

/** The built fixture for the current recipe and packages; FIXTURE_MISSING when it is not built (or stale). */
export async function loadFixture(options: FixtureOptions = {}): Promise<Fixture> {
  const state = await fixtureState(options);
  if (!state.fresh) {
    const others = await completeBuilds(fixtureRoot(options.env ?? process.env));
    throw new DevpivotError(
      'FIXTURE_MISSING',
      others.length > 0
        ? `the fixture OS in ${fixtureRoot(options.env)} is stale (recipe or packages changed; want ${state.key})`
        : `the fixture OS is not built (expected in ${state.dir})`,
      { hint: 'run: devpivot images build', exitCode: 2 },
    );
  }
  return readManifest(state.dir);
}

async function completeBuilds(root: string): Promise<string[]> {
  try {
    const names = await readdir(root);
    return names.filter((name) => !name.startsWith('.') && existsSync(join(root, name, 'manifest.json')));
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
async function mkdirTraversable(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let current = dir; !existsSync(current); current = dirname(current)) missing.unshift(current);
  await mkdir(dir, { recursive: true });
  for (const created of missing) await chmod(created, 0o755);
}

export interface BuildOptions extends FixtureOptions {
  force?: boolean;
  /** Progress lines from the recipe. */
  onLog?: (line: string) => void;
  signal?: AbortSignal;
}

export interface BuildResult {
  fixture: Fixture;
  /** False when the fixture was fresh and nothing was built. */
  built: boolean;
}

/** Remove a directory ostree may have marked immutable (deployment roots carry chattr +i). */
async function removeTree(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  await run('chattr', ['-R', '-i', dir], { timeoutMs: 60_000 });
  await rm(dir, { recursive: true, force: true });
}

function runRecipe(script: string, out: string, kernel: string, options: BuildOptions): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script, out], {
      env: { ...(options.env ?? process.env), FIXTURE_KERNEL: kernel, LC_ALL: 'C' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const tail: string[] = [];
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 30) tail.shift();
      options.onLog?.(line);
    };
    let pending = '';
    const onData = (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', onData);
    const abort = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    };
    options.signal?.addEventListener('abort', abort, { once: true });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      options.signal?.removeEventListener('abort', abort);
      if (pending) onLine(pending);
      if (code === 0) resolve(tail);
      else reject(Object.assign(new Error(`exit ${code ?? signal}`), { tail }));
    });
  });
}

async function readOutputs(out: string): Promise<Pick<Manifest, 'versions' | 'sizes' | 'kernel'>> {
  const commits = (await readFile(join(out, 'commits'), 'utf8')).trim().split('\n');
  const versions: FixtureVersion[] = commits.map((line, index) => {
    const [version, commit] = line.split(' ');
    if (!version || !commit || !/^[0-9a-f]{64}$/.test(commit)) throw new Error(`bad commits line: ${line}`);
    return index === 0 ? { version, commit, disk: 'disk.qcow2' } : { version, commit };
  });
  const sizes: Record<string, number> = {};
  for (const line of (await readFile(join(out, 'sizes'), 'utf8')).trim().split('\n')) {
    const [name, bytes] = line.split(' ');
    if (name && bytes) sizes[name] = Number(bytes);
  }
  const kernel = (await readFile(join(out, 'kernel'), 'utf8')).trim();
  return { versions, sizes, kernel };
}

/**
 * Build the fixture OS into `${cacheDir()}/fixture/<key>/` unless it is already there (or `force`). The recipe
 * runs in a temporary directory that is renamed into place only when complete, so an interrupted build never
 * looks built. One build at a time per cache directory (a lock file); older builds are removed afterwards.
 */
export async function buildFixture(options: BuildOptions = {}): Promise<BuildResult> {
  const env = options.env ?? process.env;
  let state = await fixtureState(options);
  if (state.fresh && !options.force) return { fixture: await readManifest(state.dir), built: false };
  if ((process.getuid?.() ?? 0) !== 0)
    throw new DevpivotError(
      'FIXTURE_NEEDS_ROOT',
      'building the fixture OS needs root (ostree deploy, mkfs -d ownership)',
      {
        hint: 'run: sudo devpivot images build',
        exitCode: 2,
      },
    );
  const missing = Object.entries(state.packages).filter(([, version]) => !version);
  if (missing.length > 0)
    throw new DevpivotError(
      'FIXTURE_PACKAGES',
      `the fixture OS needs Debian packages that are not installed: ${missing.map(([n]) => n).join(', ')}`,
      { hint: `apt-get install ${missing.map(([n]) => n).join(' ')}`, exitCode: 2 },
    );
  const root = fixtureRoot(env);
  await mkdirTraversable(root);
  const lock = await acquireLock(join(root, '.build.lock'), options.signal);
  try {
    // Someone else may have built it while we waited for the lock.
    state = await fixtureState(options);
    if (state.fresh && !options.force) return { fixture: await readManifest(state.dir), built: false };
    const temp = join(root, `.tmp-${state.key}-${process.pid}`);
    await removeTree(temp);
    await mkdir(temp, { mode: 0o755 });
    const started = Date.now();
    try {
      await runRecipe(join(state.recipe, 'build.sh'), temp, state.kernel, options);
      const outputs = await readOutputs(temp);
      const manifest: Manifest = {
        schema: 1,
        key: state.key,
        kernel: outputs.kernel,
        packages: state.packages,
        builtAt: new Date().toISOString(),
        buildSeconds: Math.round((Date.now() - started) / 100) / 10,
        disk: 'disk.qcow2',
        repo: 'repo',
        versions: outputs.versions,
        sizes: outputs.sizes,
      };
      await writeFile(join(temp, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o644 });
      await chmod(temp, 0o755);
      const old = join(root, `.old-${state.key}-${process.pid}`);
      if (existsSync(state.dir)) await rename(state.dir, old);
      await rename(temp, state.dir);
      await removeTree(old);
    } catch (error) {
      await removeTree(temp);
      if (options.signal?.aborted)
        throw new DevpivotError('FIXTURE_BUILD_ABORTED', 'fixture build interrupted; nothing was kept', {
          cause: error,
        });
      const tail = (error as { tail?: string[] }).tail ?? [];
      throw new DevpivotError(
        'FIXTURE_BUILD_FAILED',
        `building the fixture OS failed (${(error as Error).message}):\n${tail.slice(-12).join('\n')}`,
        {
          hint: `fix the cause above, then rerun: devpivot images build (recipe: ${relativeRecipe(state.recipe)})`,
          cause: error,
        },
      );
    }
    await removeStale(root, state.key);
    return { fixture: await readManifest(state.dir), built: true };
  } finally {
    await lock.release();
  }
}

function relativeRecipe(recipe: string): string {
  return relative(packageRoot(recipe), join(recipe, 'build.sh'));
}

/**
 * Remove leftovers of interrupted builds and builds for other keys, except the newest of those: a test or VM
 * started just before this build may still be about to open its disk (a running QEMU keeps its open file).
 */
async function removeStale(root: string, keep: string): Promise<void> {
  const previous: Array<{ name: string; mtime: number }> = [];
  for (const name of await readdir(root)) {
    if (name === keep || name === '.build.lock') continue;
    const leftover = /^\.(tmp|old)-[0-9a-f]+-(\d+)$/.exec(name);
    if (leftover) {
      if (!isAlive(Number(leftover[2]))) await removeTree(join(root, name));
      continue;
    }
    if (name.startsWith('.')) continue;
    const manifest = join(root, name, 'manifest.json');
    previous.push({ name, mtime: existsSync(manifest) ? (await stat(manifest)).mtimeMs : 0 });
  }
  previous.sort((a, b) => b.mtime - a.mtime);
  for (const { name } of previous.slice(1)) await removeTree(join(root, name));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
