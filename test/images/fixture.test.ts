import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { DevpivotError } from '../../src/core/errors.js';
import {
  buildFixture,
  computeKey,
  detectKernel,
  type Fixture,
  fixtureState,
  loadFixture,
  unreadableForOthers,
} from '../../src/fixture/fixture.js';
import { acquireLock } from '../../src/fixture/lock.js';
import { runCli } from '../helpers/cli.js';

const exec = promisify(execFile);

async function tempDir(t: { teardown: (fn: () => Promise<void>) => void }, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A recipe that runs in a moment: the real runner, manifest and rename logic around a small build.sh. */
async function quickRecipe(dir: string, body: string): Promise<string> {
  const recipe = join(dir, 'recipe');
  await mkdir(recipe, { recursive: true });
  await writeFile(join(recipe, 'build.sh'), `#!/bin/bash\nset -euo pipefail\nout=$1\n${body}\n`, { mode: 0o755 });
  return recipe;
}

const OK_BODY = `echo "fixture-build: building into $out" >&2
mkdir -p "$out/repo"
printf 'qcow2' >"$out/disk.qcow2"
for v in 1 2 3; do printf '%s %064d\\n' "$v" "$v" >>"$out/commits"; done
printf 'disk.qcow2 5\\n' >"$out/sizes"
printf '%s\\n' "$FIXTURE_KERNEL" >"$out/kernel"`;

test('the key changes with every recipe file, its executable bit, the kernel and each package version', async (t) => {
  const dir = await tempDir(t, 'devpivot-key-');
  await mkdir(join(dir, 'guest'));
  await writeFile(join(dir, 'build.sh'), 'echo one\n');
  await writeFile(join(dir, 'guest', 'init'), 'init\n');
  const packages = { ostree: '2022.7-2', skopeo: '1.9.3' };
  const base = await computeKey(dir, '6.1.0-1-amd64', packages);
  t.regex(base, /^[0-9a-f]{16}$/);
  t.is(await computeKey(dir, '6.1.0-1-amd64', { skopeo: '1.9.3', ostree: '2022.7-2' }), base, 'order-independent');
  t.not(await computeKey(dir, '6.1.0-2-amd64', packages), base);
  t.not(await computeKey(dir, '6.1.0-1-amd64', { ...packages, ostree: '2022.7-3' }), base);
  await writeFile(join(dir, 'guest', 'init'), 'init changed\n');
  const edited = await computeKey(dir, '6.1.0-1-amd64', packages);
  t.not(edited, base);
  await chmod(join(dir, 'guest', 'init'), 0o755);
  t.not(await computeKey(dir, '6.1.0-1-amd64', packages), edited);
  await writeFile(join(dir, 'guest', 'new-file'), '');
  t.not(await computeKey(dir, '6.1.0-1-amd64', packages), edited);
});

test('the kernel is the newest /lib/modules version that has a /boot/vmlinuz, the cloud flavour first', async (t) => {
  const root = await tempDir(t, 'devpivot-kernel-');
  for (const version of ['6.1.0-9-amd64', '6.1.0-10-amd64', '6.5.0-1-amd64'])
    await mkdir(join(root, 'lib/modules', version), { recursive: true });
  await mkdir(join(root, 'boot'));
  await writeFile(join(root, 'boot/vmlinuz-6.1.0-9-amd64'), '');
  await writeFile(join(root, 'boot/vmlinuz-6.1.0-10-amd64'), '');
  t.is(await detectKernel({}, root), '6.1.0-10-amd64', 'numeric order, and 6.5 has no vmlinuz');
  t.is(await detectKernel({ FIXTURE_KERNEL: '6.1.0-9-amd64' }, root), '6.1.0-9-amd64');
  // Debian's cloud flavour first, even when older; one without its vmlinuz does not count
  for (const version of ['6.1.0-8-cloud-amd64', '6.1.0-11-cloud-amd64'])
    await mkdir(join(root, 'lib/modules', version), { recursive: true });
  t.is(await detectKernel({}, root), '6.1.0-10-amd64', 'no cloud kernel has a vmlinuz yet');
  await writeFile(join(root, 'boot/vmlinuz-6.1.0-8-cloud-amd64'), '');
  t.is(await detectKernel({}, root), '6.1.0-8-cloud-amd64');
  const empty = await tempDir(t, 'devpivot-kernel-');
  const error = await t.throwsAsync(detectKernel({}, empty), { instanceOf: DevpivotError });
  t.is(error.code, 'FIXTURE_NO_KERNEL');
});

test('loadFixture says how to build when nothing is built', async (t) => {
  const cache = await tempDir(t, 'devpivot-cache-');
  const error = await t.throwsAsync(loadFixture({ env: { ...process.env, DEVPIVOT_CACHE_DIR: cache } }), {
    instanceOf: DevpivotError,
  });
  t.is(error.code, 'FIXTURE_MISSING');
  t.is(error.hint, 'run: devpivot images build');
  t.true(error.message.includes(cache));
});

test('a build is renamed into place with its manifest; fresh builds are no-ops; --force rebuilds', async (t) => {
  const dir = await tempDir(t, 'devpivot-build-');
  await chmod(dir, 0o755); // mkdtemp makes 0700, which QEMU running as libvirt-qemu could not traverse
  const env = { ...process.env, DEVPIVOT_CACHE_DIR: join(dir, 'cache') };
  const recipeDir = await quickRecipe(dir, OK_BODY);
  const logs: string[] = [];
  const first = await buildFixture({ env, recipeDir, onLog: (line) => logs.push(line) });
  t.true(first.built);
  t.true(logs.some((line) => line.startsWith('fixture-build: building into ')));
  const fixture: Fixture = first.fixture;
  t.is(fixture.dir, join(dir, 'cache', 'fixture', fixture.key));
  t.is(fixture.disk, join(fixture.dir, 'disk.qcow2'));
  t.is(fixture.repo, join(fixture.dir, 'repo'));
  t.deepEqual(
    fixture.versions.map((entry) => [entry.version, entry.commit.slice(-1), entry.disk]),
    [
      ['1', '1', fixture.disk],
      ['2', '2', undefined],
      ['3', '3', undefined],
    ],
  );
  t.deepEqual(await loadFixture({ env, recipeDir }), fixture);
  t.deepEqual(await readdir(join(dir, 'cache', 'fixture')), [fixture.key], 'no temp dir, no lock left');
  t.deepEqual(await unreadableForOthers(fixture.disk), [], 'libvirt-qemu can reach the disk');

  const again = await buildFixture({ env, recipeDir });
  t.false(again.built);
  t.is(again.fixture.builtAt, fixture.builtAt);

  const forced = await buildFixture({ env, recipeDir, force: true });
  t.true(forced.built);
  t.not(forced.fixture.builtAt, fixture.builtAt);

  // An edited recipe is another key. The previous build stays (a VM may be about to use it), older ones go.
  await writeFile(join(recipeDir, 'notes.txt'), 'changed\n');
  const second = await buildFixture({ env, recipeDir });
  t.true(second.built);
  t.not(second.fixture.key, fixture.key);
  t.deepEqual((await readdir(join(dir, 'cache', 'fixture'))).sort(), [fixture.key, second.fixture.key].sort());
  await writeFile(join(recipeDir, 'notes.txt'), 'changed again\n');
  const third = await buildFixture({ env, recipeDir });
  t.deepEqual((await readdir(join(dir, 'cache', 'fixture'))).sort(), [second.fixture.key, third.fixture.key].sort());
});

test("a build in the shared cache is used read-only when the user's own cache lacks it; the own one wins", async (t) => {
  const dir = await tempDir(t, 'devpivot-build-');
  await chmod(dir, 0o755);
  const recipeDir = await quickRecipe(dir, OK_BODY);
  const shared = join(dir, 'system-cache');
  const built = await buildFixture({ env: { ...process.env, DEVPIVOT_CACHE_DIR: shared }, recipeDir });
  const env = { ...process.env, DEVPIVOT_CACHE_DIR: join(dir, 'own'), DEVPIVOT_SHARED_CACHE_DIR: shared };
  const state = await fixtureState({ env, recipeDir });
  t.like(state, { fresh: true, source: 'shared', dir: built.fixture.dir });
  t.is((await loadFixture({ env, recipeDir })).dir, built.fixture.dir);
  const again = await buildFixture({ env, recipeDir });
  t.false(again.built, 'nothing is rebuilt while the shared cache has it');
  t.false(existsSync(join(dir, 'own', 'fixture', state.key)));
  const own = await buildFixture({ env, recipeDir, force: true });
  t.is(own.fixture.dir, join(dir, 'own', 'fixture', state.key));
  t.like(await fixtureState({ env, recipeDir }), { source: 'own', dir: own.fixture.dir });
  t.is((await loadFixture({ env, recipeDir })).builtAt, own.fixture.builtAt);
});

test('a failed build leaves nothing that looks built and reports the recipe output', async (t) => {
  const dir = await tempDir(t, 'devpivot-build-');
  const env = { ...process.env, DEVPIVOT_CACHE_DIR: join(dir, 'cache') };
  const recipeDir = await quickRecipe(
    dir,
    'printf "x" >"$out/disk.qcow2"\necho "fixture-build: error: mkfs exploded" >&2\nexit 3',
  );
  const error = await t.throwsAsync(buildFixture({ env, recipeDir }), { instanceOf: DevpivotError });
  t.is(error.code, 'FIXTURE_BUILD_FAILED');
  t.regex(error.message, /exit 3/);
  t.regex(error.message, /mkfs exploded/);
  t.deepEqual(await readdir(join(dir, 'cache', 'fixture')), []);
  await t.throwsAsync(loadFixture({ env, recipeDir }), { message: /not built/ });
});

test('the build lock waits for a live owner and takes over from a dead one', async (t) => {
  const dir = await tempDir(t, 'devpivot-lock-');
  const path = join(dir, '.build.lock');
  const first = await acquireLock(path);
  let second = false;
  const waiting = acquireLock(path).then((lock) => {
    second = true;
    return lock;
  });
  await new Promise((resolve) => setTimeout(resolve, 800));
  t.false(second, 'waits while the owner is alive');
  await first.release();
  await (await waiting).release();
  t.true(second);
  await writeFile(path, '999999999\n'); // no such pid
  const taken = await acquireLock(path, undefined, 2000);
  t.is((await readFile(path, 'utf8')).trim(), String(process.pid));
  await taken.release();
  t.false(existsSync(path));
});

// The real fixture, as `npm test`'s set-up step built it.
test('images build is a quiet no-op when fresh, and images list describes the real build', async (t) => {
  // "Up to date" and a silent stderr prove nothing was rebuilt; its speed belongs in a benchmark, not here.
  const build = await runCli(['images', 'build']);
  t.is(build.code, 0, build.stderr);
  t.regex(build.stdout, /^fixture OS up to date: \S+\n$/);
  t.is(build.stderr, '');

  const list = await runCli(['images', 'list', '--json']);
  t.is(list.code, 0, list.stderr);
  const fixture = JSON.parse(list.stdout) as Fixture & { built: boolean };
  t.true(fixture.built);
  t.deepEqual(
    fixture.versions.map((entry) => entry.version),
    ['1', '2', '3'],
  );
  t.is(fixture.versions[0]!.disk, fixture.disk);
  t.deepEqual(await unreadableForOthers(fixture.disk), []);
  const info = JSON.parse((await exec('qemu-img', ['info', '--output=json', fixture.disk])).stdout) as {
    format: string;
    'backing-filename'?: string;
  };
  t.is(info.format, 'qcow2');
  t.is(info['backing-filename'], undefined);
  for (const entry of fixture.versions) {
    t.regex(entry.commit, /^[0-9a-f]{64}$/);
    const { stdout } = await exec('ostree', [
      'show',
      `--repo=${fixture.repo}`,
      '--print-metadata-key=version',
      entry.commit,
    ]);
    t.is(stdout.trim(), `'${entry.version}'`);
  }
  t.regex((await exec('ostree', ['config', `--repo=${fixture.repo}`, 'get', 'core.mode'])).stdout, /archive/);

  const text = await runCli(['images', 'list']);
  for (const entry of fixture.versions) t.true(text.stdout.includes(`version ${entry.version}  ${entry.commit}`));
  t.true(text.stdout.includes(fixture.disk));
});

test('images rejects an unknown action and misplaced options', async (t) => {
  const unknown = await runCli(['images', 'frobnicate']);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /unknown images action 'frobnicate'/);
  const misplaced = await runCli(['images', 'list', '--force']);
  t.is(misplaced.code, 2);
  t.regex(misplaced.stderr, /--force is an option of `images build`/);
});
