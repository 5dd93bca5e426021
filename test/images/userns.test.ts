import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { runRecipe, withSbin } from '../../src/fixture/fixture-build.js';
import { isInitialUidMap, recipeCommand, recipeMode, userNamespaceHint } from '../../src/fixture/userns.js';

const exec = promisify(execFile);

/** Whether this machine lets us make a user namespace (what the rootless build needs). */
async function haveUserNamespaces(): Promise<boolean> {
  return exec('unshare', ['--map-root-user', 'true']).then(
    () => true,
    () => false,
  );
}

test('uid_map: only the initial namespace maps every uid to itself', (t) => {
  t.true(isInitialUidMap('         0          0 4294967295\n'));
  t.true(isInitialUidMap('0 0 4294967295'));
  t.false(isInitialUidMap('         0       1001          1\n'), 'unshare --map-root-user as uid 1001');
  t.false(isInitialUidMap('         0          0          1\n'), 'unshare --map-root-user as root');
  t.false(isInitialUidMap('0 1001 1\n1 100000 65536\n'), 'unshare --map-auto / newuidmap');
  t.false(isInitialUidMap(''));
});

test('the recipe command: bash for root, unshare --map-root-user bash for everyone else', (t) => {
  t.deepEqual(recipeCommand('/r/build.sh', '/o', 'root'), { file: 'bash', args: ['/r/build.sh', '/o'] });
  t.deepEqual(recipeCommand('/r/build.sh', '/o', 'userns'), {
    file: 'unshare',
    args: ['--map-root-user', 'bash', '/r/build.sh', '/o'],
  });
});

test('root runs the recipe directly, without probing', async (t) => {
  t.is(await recipeMode(0), 'root');
});

test('a non-root uid gets a user namespace when the machine allows them', async (t) => {
  if (!(await haveUserNamespaces())) return t.pass('no user namespaces here: FIXTURE_NEEDS_ROOT is the answer');
  t.is(await recipeMode(1000), 'userns');
});

test('the FIXTURE_NEEDS_ROOT hint names the probe failure and the switches that enable user namespaces', (t) => {
  const hint = userNamespaceHint('unshare: unshare failed: Operation not permitted');
  t.regex(hint, /unshare --map-root-user failed: unshare: unshare failed: Operation not permitted/);
  t.regex(hint, /user\.max_user_namespaces/);
  t.regex(hint, /sudo devpivot images build/);
});

test('in userns mode the recipe runs as uid 0 of a user namespace (what build.sh detects)', async (t) => {
  if (!(await haveUserNamespaces())) return t.pass('no user namespaces here');
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-userns-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const script = join(dir, 'build.sh');
  await writeFile(script, "set -eu\nid -u\nawk '{ print $1, $2, $3 }' /proc/self/uid_map\n", { mode: 0o755 });
  const lines = await runRecipe(script, join(dir, 'out'), 'k', { mode: 'userns' });
  t.is(lines[0], '0');
  t.false(isInitialUidMap(lines.slice(1).join('\n')), lines.join(' | '));
});

test("the recipe finds the sbin tools (mkfs.ext4, sfdisk) with a normal user's Debian PATH", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-userns-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const script = join(dir, 'build.sh');
  await writeFile(script, 'set -eu\necho "$PATH"\ncommand -v mkfs.ext4 sfdisk\n', { mode: 0o755 });
  const userPath = '/usr/local/bin:/usr/bin:/bin:/usr/games';
  const lines = await runRecipe(script, join(dir, 'out'), 'k', { env: { PATH: userPath } });
  t.is(lines[0], `${userPath}:/usr/local/sbin:/usr/sbin:/sbin`);
  t.deepEqual(lines.slice(1), ['/usr/sbin/mkfs.ext4', '/usr/sbin/sfdisk']);
  t.is(withSbin('/usr/sbin:/usr/bin'), '/usr/sbin:/usr/bin:/usr/local/sbin:/sbin');
});
