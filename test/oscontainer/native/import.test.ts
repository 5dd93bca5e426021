/**
 * Real ostree reads the native layer: extracted as a container runtime would (GNU tar, and the fixture's busybox
 * tar), `sysroot/ostree/repo` is a valid bare-split-xattrs repo (`ostree fsck` recomputes every checksum, the
 * xattrs from `.file-xattrs-link` included), `ostree pull-local` imports the commit into a fresh repo, and the
 * imported tree is the commit's. The same layer is also the ordinary filesystem, its files hard links to objects.
 */
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { execa } from 'execa';
import { loadFixture } from '../../../src/fixture/fixture.js';
import { buildOscontainer, type OscontainerImage } from '../../../src/oscontainer/build.js';
import { CAPABILITY, lsCommit, makeOsTree, type OsTree, USER_XATTR } from './os-tree.js';
import { importerError } from './stream-rules.js';
import { tarEntries } from './tar-entries.js';

let os: OsTree;
let image: OscontainerImage;

test.before(async () => {
  os = await makeOsTree();
  image = await buildOscontainer({ repo: os.repo, commit: os.commit, format: 'native' });
});
test.after.always(async () => {
  await image?.dispose();
  if (os) await rm(os.dir, { recursive: true, force: true });
});

const ostree = async (...args: string[]) => (await execa('ostree', args)).stdout;
const objectFile = (root: string, checksum: string) =>
  join(root, 'sysroot/ostree/repo/objects', checksum.slice(0, 2), `${checksum.slice(2)}.file`);

/** fsck the extracted repo, pull the commit into a fresh bare-user repo, fsck that, and list the commit there. */
async function importAndList(root: string, commit: string): Promise<string> {
  const extracted = join(root, 'sysroot/ostree/repo');
  assertSplitXattrsConfig(await readFile(join(extracted, 'config'), 'utf8'));
  const fsck = await ostree('fsck', `--repo=${extracted}`);
  if (!/object fsck of 1 commits completed successfully - no errors found/.test(fsck)) throw new Error(fsck);
  const fresh = join(root, '..', 'imported');
  await ostree('init', '--mode=bare-user', `--repo=${fresh}`);
  await ostree('pull-local', `--repo=${fresh}`, extracted, commit);
  const again = await ostree('fsck', `--repo=${fresh}`);
  if (!/no errors found/.test(again)) throw new Error(again);
  return execFileSync('ostree', ['ls', '-R', '-X', '-C', `--repo=${fresh}`, commit], { encoding: 'utf8' });
}

function assertSplitXattrsConfig(config: string): void {
  if (!/^mode=bare-split-xattrs$/m.test(config)) throw new Error(`not a bare-split-xattrs repo config: ${config}`);
}

test('GNU tar extracts it; ostree fscks the repo, imports the commit and lists the same tree', async (t) => {
  t.timeout(180_000); // two cores shared with VMs: ostree's import can take a while
  const work = await mkdtemp(join(tmpdir(), 'devpivot-test-native-import-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  const root = join(work, 'root');
  await mkdir(root);
  await execa('tar', ['--xattrs', '--xattrs-include=*', '-xzf', image.layer.path, '-C', root]);
  t.is(await importAndList(root, os.commit), lsCommit(os.repo, os.commit));

  // The container filesystem: files are the objects (hard links), symlinks are symlinks, /usr/etc is /etc.
  const ls = lsCommit(os.repo, os.commit);
  const checksumOf = (path: string) => new RegExp(`([0-9a-f]{64}) \\{.*\\} ${path}$`, 'm').exec(ls)![1]!;
  const hello = await stat(join(root, 'usr/bin/hello'));
  t.is(hello.ino, (await stat(objectFile(root, checksumOf('/usr/bin/hello')))).ino);
  t.is(hello.nlink, 3); // the object, usr/bin/hello, usr/libexec/hello-again
  t.is(hello.mode & 0o7777, 0o755);
  t.deepEqual(await readFile(join(root, 'usr/lib/big.bin')), await readFile(join(os.tree, 'usr/lib/big.bin')));
  t.is(await readFile(join(root, 'etc/os-release'), 'utf8'), 'NAME=devpivot-native\nVERSION_ID=3\n');
  t.true((await lstat(join(root, 'usr/bin/sh'))).isSymbolicLink());
  t.is(await readlink(join(root, 'usr/bin/sh')), 'hello');
  t.is(await readlink(join(root, 'bin')), 'usr/bin');
  t.is((await stat(join(root, 'var/tmp'))).mode & 0o7777, 0o1777);
  const owned = await stat(join(root, 'usr/share/owned'));
  t.deepEqual([owned.uid, owned.gid, owned.mode & 0o7777], [1000, 1000, 0o640]);
  t.is((await stat(join(root, 'usr/bin/suid'))).mode & 0o7777, 0o4755);
  // The PAX records put the binary xattrs on the extracted object (and so on its hard links).
  const xattr = (name: string) =>
    execFileSync(
      'python3',
      [
        '-c',
        `import os,sys; sys.stdout.write(os.getxattr(sys.argv[1], '${name}').hex())`,
        join(root, 'usr/share/caps'),
      ],
      {
        encoding: 'utf8',
      },
    );
  t.is(xattr('user.devpivot'), USER_XATTR.toString('hex'));
  t.is(xattr('security.capability'), CAPABILITY.toString('hex'));
});

test("busybox tar (the fixture's) extracts a layer that ostree fscks and imports", async (t) => {
  t.timeout(180_000);
  const work = await mkdtemp(join(tmpdir(), 'devpivot-test-native-busybox-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  const root = join(work, 'root');
  await mkdir(root);
  await execa('busybox', ['tar', '-xzf', image.layer.path, '-C', root]);
  t.is(await importAndList(root, os.commit), lsCommit(os.repo, os.commit));
});

test('the fixture OS commit (as npm test builds it) round-trips through the native layer', async (t) => {
  t.timeout(180_000);
  const fixture = await loadFixture();
  const v2 = fixture.versions.find((v) => v.version === '2') ?? fixture.versions[1]!;
  const built = await buildOscontainer({ repo: fixture.repo, commit: v2.commit, format: 'native' });
  t.teardown(() => built.dispose());
  const work = await mkdtemp(join(tmpdir(), 'devpivot-test-native-fixture-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  const root = join(work, 'root');
  await mkdir(root);
  await execa('tar', ['-xzf', built.layer.path, '-C', root]);
  t.is(await importAndList(root, v2.commit), lsCommit(fixture.repo, v2.commit));
  t.is(JSON.parse(built.config.bytes.toString()).config.Labels['ostree.commit'], v2.commit);
  // Read as ostree-ext's importer reads it: a stream with its order rules (stream-rules.ts).
  t.is(importerError(await tarEntries(built.layer.path), 'commit'), null);
});
