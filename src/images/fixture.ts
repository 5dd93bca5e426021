/**
 * The fixture OS, as the rest of devpivot sees it: where the build for the current recipe and packages lives,
 * loading it, building it. The pieces: fixture-key.ts (the cache key), fixture-build.ts (running build.sh),
 * fixture-store.ts (cache directories, manifest, keeping and removing builds), lock.ts (one build at a time).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DevpivotError } from '../core/errors.js';
import { sharedCacheDir } from '../core/paths.js';
import { readOutputs, relativeRecipe, runRecipe } from './fixture-build.js';
import { computeKey, detectKernel, packageVersions } from './fixture-key.js';
import { fixturePackages } from './fixture-packages.js';
import {
  completeBuilds,
  type Fixture,
  fixtureRoot,
  install,
  lockPath,
  MANIFEST,
  type Manifest,
  mkdirTraversable,
  readManifest,
  removeStale,
  removeTree,
  tempBuildDir,
} from './fixture-store.js';
import { acquireLock } from './lock.js';
import { type RecipeMode, recipeMode } from './userns.js';

export { computeKey, detectKernel, packageVersions } from './fixture-key.js';
export { fixturePackages } from './fixture-packages.js';
export { type Fixture, type FixtureVersion, fixtureRoot, unreadableForOthers } from './fixture-store.js';

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

export interface FixtureState {
  key: string;
  dir: string;
  kernel: string;
  packages: Record<string, string>;
  recipe: string;
  /** True when `dir` holds a complete build (manifest.json is written last, before the atomic rename). */
  fresh: boolean;
  /**
   * `own`: `dir` is in the user's cache (built there, or to be built there); `shared`: the user's cache lacks it and
   * the shared cache (root's, core/paths.ts sharedCacheDir) has it, used read-only.
   */
  source: 'own' | 'shared';
}

/** Where the fixture for the current recipe and packages lives, and whether it is built. */
export async function fixtureState(options: FixtureOptions = {}): Promise<FixtureState> {
  const env = options.env ?? process.env;
  const recipe = options.recipeDir ?? defaultRecipeDir();
  const kernel = await detectKernel(env);
  const packages = await packageVersions(fixturePackages(kernel));
  const key = await computeKey(recipe, kernel, packages);
  const dir = join(fixtureRoot(env), key);
  const state = { key, dir, kernel, packages, recipe };
  if (existsSync(join(dir, MANIFEST))) return { ...state, fresh: true, source: 'own' };
  const shared = sharedCacheDir(env);
  const sharedDir = shared === undefined ? undefined : join(shared, 'fixture', key);
  if (sharedDir && existsSync(join(sharedDir, MANIFEST)))
    return { ...state, dir: sharedDir, fresh: true, source: 'shared' };
  return { ...state, fresh: false, source: 'own' };
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
      { exitCode: 2 },
    );
  }
  return readManifest(state.dir);
}

export interface FixtureBuildOptions extends FixtureOptions {
  force?: boolean;
  /** Progress lines from the recipe. */
  onLog?: (line: string) => void;
  signal?: AbortSignal;
  /** Run the recipe this way instead of by uid (root: directly; others: unshare). Tests force 'userns' as root. */
  mode?: RecipeMode;
}

export interface BuildResult {
  fixture: Fixture;
  /** False when the fixture was fresh and nothing was built. */
  built: boolean;
}

/**
 * Build the fixture OS into `${cacheDir()}/fixture/<key>/` unless it is already there (or `force`). The recipe
 * runs in a temporary directory that is renamed into place only when complete, so an interrupted build never
 * looks built. One build at a time per cache directory (a lock file); older builds are removed afterwards.
 * Root runs the recipe directly, anyone else through `unshare --map-root-user` (userns.ts): the same outputs.
 */
export async function buildFixture(options: FixtureBuildOptions = {}): Promise<BuildResult> {
  const env = options.env ?? process.env;
  let state = await fixtureState(options);
  if (state.fresh && !options.force) return { fixture: await readManifest(state.dir), built: false };
  // Not root: the recipe runs as the root of a user namespace (FIXTURE_NEEDS_ROOT when there are none).
  const mode = options.mode ?? (await recipeMode());
  const missing = Object.entries(state.packages).filter(([, version]) => !version);
  if (missing.length > 0)
    throw new DevpivotError(
      'FIXTURE_PACKAGES',
      `the fixture OS needs Debian packages that are not installed: ${missing.map(([n]) => n).join(', ')}`,
      { hint: `apt-get install ${missing.map(([n]) => n).join(' ')}`, exitCode: 2 },
    );
  const root = fixtureRoot(env);
  await mkdirTraversable(root);
  const lock = await acquireLock(lockPath(root), options.signal);
  try {
    // Someone else may have built it while we waited for the lock.
    state = await fixtureState(options);
    if (state.fresh && !options.force) return { fixture: await readManifest(state.dir), built: false };
    const temp = tempBuildDir(root, state.key);
    await removeTree(temp);
    await mkdir(temp, { mode: 0o755 });
    const started = Date.now();
    try {
      await runRecipe(join(state.recipe, 'build.sh'), temp, state.kernel, { ...options, mode });
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
      // Into the own cache, even when the shared one has this key (--force): the shared cache is never written.
      await install(root, temp, join(root, state.key), manifest);
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
    return { fixture: await readManifest(join(root, state.key)), built: true };
  } finally {
    await lock.release();
  }
}
