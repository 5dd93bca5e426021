/** Running the fixture recipe (images/fixture/build.sh) and reading what it wrote. */
import { readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { startProcess } from '../core/exec.js';
import type { FixtureVersion, Manifest } from './fixture-store.js';
import { type RecipeMode, recipeCommand } from './userns.js';

/** How many of the recipe's last output lines a failure keeps. */
const TAIL_LINES = 30;

export class RecipeFailure extends Error {
  constructor(
    message: string,
    /** The recipe's last output lines. */
    readonly tail: string[],
  ) {
    super(message);
    this.name = 'RecipeFailure';
  }
}

export interface RecipeRun {
  env?: NodeJS.ProcessEnv;
  /** Each output line of the recipe (stdout and stderr). */
  onLog?: (line: string) => void;
  /** Aborting it ends the recipe's whole process group (SIGTERM). */
  signal?: AbortSignal;
  /** As root (default) or as the root of a user namespace (`unshare --map-root-user`, for everyone else). */
  mode?: RecipeMode;
}

/**
 * Run `build.sh OUT` with the kernel to use; resolves with its last output lines, rejects with RecipeFailure
 * (exit status or signal, and the last lines) when it fails.
 */
export async function runRecipe(script: string, out: string, kernel: string, options: RecipeRun): Promise<string[]> {
  const tail: string[] = [];
  const command = recipeCommand(script, out, options.mode ?? 'root');
  const env = options.env ?? process.env;
  const child = startProcess(command.file, command.args, {
    env: { ...env, PATH: withSbin(env.PATH), FIXTURE_KERNEL: kernel, LC_ALL: 'C' },
    signal: options.signal,
    onLine: (line) => {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      options.onLog?.(line);
    },
  });
  const exit = await child.exited;
  if (exit.spawnError) throw exit.spawnError;
  if (exit.code !== 0) throw new RecipeFailure(`exit ${exit.code ?? exit.signal}`, tail);
  return tail;
}

/** The sbin directories, where mkfs.ext4, sfdisk and debugfs live, are not on a normal user's PATH on Debian. */
const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/** `path` with the sbin directories it lacks appended (the user's own choices keep their precedence). */
export function withSbin(path: string | undefined): string {
  const dirs = (path ?? '/usr/local/bin:/usr/bin:/bin').split(':').filter(Boolean);
  return [...dirs, ...SBIN.filter((dir) => !dirs.includes(dir))].join(':');
}

/** What the recipe leaves in OUT besides the image: `commits` ("VERSION COMMIT" lines), `sizes`, `kernel`. */
export async function readOutputs(out: string): Promise<Pick<Manifest, 'versions' | 'sizes' | 'kernel'>> {
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

/** build.sh relative to the package root, for messages ("images/fixture/build.sh"). */
export function relativeRecipe(recipe: string): string {
  return relative(dirname(dirname(recipe)), join(recipe, 'build.sh'));
}
