/**
 * The fixture's cache key: what the build is made of (recipe files, kernel, Debian package versions), hashed.
 * Any change means another key, so another build directory.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { DevpivotError } from '../core/errors.js';
import { run } from '../core/exec.js';

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
    // mco/ is the MCO image's content, built at run time (src/oscontainer/mco-image.ts), not part of the disks.
    if (relative(recipe, file).startsWith('mco/')) continue;
    const [content, info] = await Promise.all([readFile(file), stat(file)]);
    const digest = createHash('sha256').update(content).digest('hex');
    hash.update(`file ${relative(recipe, file)} ${info.mode & 0o111 ? 'x' : '-'} ${digest}\n`);
  }
  hash.update(`kernel ${kernel}\n`);
  for (const name of Object.keys(packages).sort()) hash.update(`package ${name} ${packages[name]}\n`);
  return hash.digest('hex').slice(0, 16);
}
