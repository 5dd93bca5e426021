/**
 * The native builder's readers and writer on their own: the GVariant reader against objects real ostree wrote
 * (and what `ostree show` / `ostree ls` say about them), the tar writer against GNU tar's reading of its output.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { execa } from 'execa';
import { buildOscontainer } from '../../../src/oscontainer/build.js';
import { ArchiveRepo, repoMode } from '../../../src/oscontainer/native/archive-repo.js';
import { decode, parseType } from '../../../src/oscontainer/native/gvariant.js';
import { objectPath, planLayer } from '../../../src/oscontainer/native/layer-plan.js';
import { parseCommit, parseDirMeta, parseDirTree } from '../../../src/oscontainer/native/objects.js';
import {
  END_OF_ARCHIVE,
  encodeHeader,
  entrySize,
  paddingFor,
  paxRecords,
} from '../../../src/oscontainer/native/tar-writer.js';
import { makeOsTree, type OsTree } from './os-tree.js';

let os: OsTree;
test.before(async () => {
  os = await makeOsTree({ largeKiB: 64 });
});
test.after.always(async () => {
  if (os) await rm(os.dir, { recursive: true, force: true });
});

const ostree = (...args: string[]) => execFileSync('ostree', args, { encoding: 'utf8' }).trim();

test('a commit object decodes to what ostree show says: subject, timestamp, metadata, root tree', async (t) => {
  const repo = new ArchiveRepo(os.repo);
  const commit = parseCommit(await repo.readMetadata('commit', os.commit));
  t.is(commit.subject, os.subject);
  t.is(commit.body, '');
  t.is(commit.parent, null);
  t.is(commit.timestamp, Date.parse(os.timestamp) / 1000);
  t.deepEqual(commit.metadata.get('version'), { type: 's', value: '3.0' });
  t.deepEqual(commit.metadata.get('ostree.linux'), { type: 's', value: '6.1.0-test' });
  t.deepEqual(commit.metadata.get('ostree.container-cmd'), { type: 'as', value: ['/usr/bin/hello', '--greet'] });
  const root = ostree('ls', '-C', '-d', `--repo=${os.repo}`, os.commit, '/').split(/\s+/);
  t.is(commit.rootTree, root[4]!);
  t.is(commit.rootMeta, root[5]!);
  // A second commit on the branch has the first as parent.
  const child = ostree('commit', `--repo=${os.repo}`, '--branch=testos/native', `--tree=dir=${os.tree}`, '-s', 'child');
  t.is(parseCommit(await repo.readMetadata('commit', child)).parent, os.commit);
});

test('dirtree and dirmeta objects decode to the names, checksums and modes ostree ls lists', async (t) => {
  const repo = new ArchiveRepo(os.repo);
  const [, , , , tree, meta] = ostree('ls', '-C', '-d', `--repo=${os.repo}`, os.commit, '/usr/lib').split(/\s+/);
  const dirtree = parseDirTree(await repo.readMetadata('dirtree', tree!));
  const listed = ostree('ls', '-C', `--repo=${os.repo}`, os.commit, '/usr/lib')
    .split('\n')
    .slice(1) // the directory itself
    .map((line) => line.split(/\s+/));
  const files = listed.filter((cols) => !cols[0]!.startsWith('d'));
  const dirs = listed.filter((cols) => cols[0]!.startsWith('d'));
  t.deepEqual(
    dirtree.files.map((f) => [f.name, f.checksum]),
    files.map((cols) => [
      cols
        .at(cols[0]!.startsWith('l') ? -3 : -1)!
        .split('/')
        .pop(),
      cols[4],
    ]),
  );
  t.deepEqual(
    dirtree.dirs.map((d) => [d.name, d.tree, d.meta]),
    dirs.map((cols) => [cols.at(-1)!.split('/').pop(), cols[4], cols[5]]),
  );
  t.deepEqual(parseDirMeta(await repo.readMetadata('dirmeta', meta!)), { uid: 0, gid: 0, mode: 0o40755 });
  const privateMeta = dirtree.dirs.find((d) => d.name === 'private')!.meta;
  t.like(parseDirMeta(await repo.readMetadata('dirmeta', privateMeta)), { mode: 0o40700 });
});

test('content objects: the .filez header and inflated content match the tree; a missing object is named', async (t) => {
  const repo = new ArchiveRepo(os.repo);
  t.deepEqual(await repoMode(os.repo), { mode: 'archive-z2', parent: null });
  const line = ostree('ls', '-C', `--repo=${os.repo}`, os.commit, '/usr/lib/big.bin').split(/\s+/);
  const header = await repo.readContentHeader(line[4]!);
  t.like(header, { size: 64 * 1024, uid: 0, gid: 0, mode: 0o100644, symlink: '' });
  const expected = await readFile(join(os.tree, 'usr/lib/big.bin'));
  t.deepEqual(await repo.readContent(line[4]!, header), expected);
  const chunks: Buffer[] = [];
  for await (const chunk of repo.streamContent(line[4]!, header)) chunks.push(chunk);
  t.deepEqual(Buffer.concat(chunks), expected);
  const link = ostree('ls', '-C', `--repo=${os.repo}`, os.commit, '/usr/bin/abs').split(/\s+/);
  t.like(await repo.readContentHeader(link[4]!), { size: 0, mode: 0o120777, symlink: '/usr/bin/hello' });
  await t.throwsAsync(repo.readMetadata('dirtree', '00'.repeat(32)), { code: 'OSTREE_OBJECT_MISSING' } as never);
});

test('GVariant framing: nested variable-size arrays, variants and wide offsets', (t) => {
  // a{sv} with a 300-byte string: the container needs 2-byte framing offsets.
  const long = 'x'.repeat(300);
  const entry = (key: string, value: Buffer, type: string) => {
    // {sv}: key, nul, padding to 8, variant (value, nul, type), then the key's end offset.
    const keyBytes = Buffer.from(`${key}\0`);
    const pad = Buffer.alloc((8 - (keyBytes.byteLength % 8)) % 8);
    const variant = Buffer.concat([value, Buffer.from([0]), Buffer.from(type)]);
    const body = Buffer.concat([keyBytes, pad, variant]);
    const wide = body.byteLength + 1 > 0xff;
    const offset = Buffer.alloc(wide ? 2 : 1);
    if (wide) offset.writeUInt16LE(keyBytes.byteLength);
    else offset[0] = keyBytes.byteLength;
    return Buffer.concat([body, offset]);
  };
  const a = entry('a', Buffer.from(`${long}\0`), 's');
  const b = entry('b', Buffer.from([1]), 'b');
  // The array: elements aligned to 8, then their end offsets (2 bytes each: the array exceeds 255 bytes).
  const padA = Buffer.alloc((8 - (a.byteLength % 8)) % 8);
  const body = Buffer.concat([a, padA, b]);
  const offsets = Buffer.alloc(4);
  offsets.writeUInt16LE(a.byteLength, 0);
  offsets.writeUInt16LE(body.byteLength, 2);
  const decoded = decode('a{sv}', Buffer.concat([body, offsets])) as Array<[string, { type: string; value: unknown }]>;
  t.deepEqual(decoded, [
    ['a', { type: 's', value: long }],
    ['b', { type: 'b', value: true }],
  ]);
  t.throws(() => parseType('(sm)'), { message: /unsupported type character 'm'/ });
  t.throws(() => decode('s', Buffer.from('no nul')), { message: /string without its nul/ });
});

test('tar writer: GNU tar reads long names, long link targets, base-256 ids and binary PAX records', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-tarwriter-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const longName = `${'n'.repeat(70)}/${'m'.repeat(70)}/file`;
  const longTarget = `/${'l'.repeat(150)}`;
  const content = Buffer.from('hello\n');
  const headers = [
    { name: longName, type: 'file' as const, mode: 0o4755, uid: 3_000_000, gid: 7, size: content.byteLength },
    { name: 'link', type: 'symlink' as const, mode: 0o777, uid: 0, gid: 0, linkname: longTarget },
    { name: 'hard', type: 'link' as const, mode: 0o644, uid: 0, gid: 0, linkname: longName },
  ];
  const pax: Array<[string, Buffer]> = [['SCHILY.xattr.user.bin', Buffer.from([0, 0xff, 0x0a, 0x3d])]];
  const parts = [
    encodeHeader({ ...headers[0]!, pax }),
    content,
    paddingFor(content.byteLength),
    encodeHeader(headers[1]!),
    encodeHeader(headers[2]!),
    END_OF_ARCHIVE,
  ];
  const archive = Buffer.concat(parts);
  t.is(archive.byteLength, entrySize({ ...headers[0]!, pax }) + entrySize(headers[1]!) + entrySize(headers[2]!) + 1024);
  await writeFile(join(dir, 'a.tar'), archive);
  const listing = execFileSync('tar', ['--numeric-owner', '-tvf', join(dir, 'a.tar')], { encoding: 'utf8' });
  t.regex(listing, new RegExp(`^-rwsr-xr-x 3000000/7 +6 1970-01-01 00:00 ${longName}$`, 'm'));
  t.regex(listing, new RegExp(`^lrwxrwxrwx +0/0 +0 1970-01-01 00:00 link -> ${longTarget}$`, 'm'));
  t.regex(listing, new RegExp(`^hrw-r--r-- +0/0 +0 1970-01-01 00:00 hard link to ${longName}$`, 'm'));
  // The PAX record's length counts itself, and its value is the raw bytes.
  const record = paxRecords(pax);
  t.is(Number(record.toString('latin1').split(' ')[0]), record.byteLength);
  t.deepEqual(record.subarray(record.byteLength - 5, record.byteLength - 1), pax[0]![1]);
  // GNU tar lists each xattr with its value's length; extracted, the value is the raw bytes.
  const verbose = execFileSync('tar', ['--xattrs', '--xattrs-include=*', '-tvvf', join(dir, 'a.tar')], {
    encoding: 'utf8',
  });
  t.regex(verbose, /^ +x: +4 user\.bin$/m);
  await execa('tar', ['--xattrs', '--xattrs-include=*', '-xf', join(dir, 'a.tar'), '-C', dir, longName]);
  const value = execFileSync(
    'python3',
    ['-c', "import os,sys; sys.stdout.write(os.getxattr(sys.argv[1], 'user.bin').hex())", join(dir, longName)],
    { encoding: 'utf8' },
  );
  t.is(value, '00ff0a3d');
});

test('/sysroot: its empty dirtree is written when no other directory is empty; content under it is refused', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-sysroot-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const repo = join(dir, 'repo');
  ostree('init', '--mode=archive', `--repo=${repo}`);
  const tree = join(dir, 'tree');
  await mkdir(join(tree, 'usr'), { recursive: true });
  await mkdir(join(tree, 'sysroot'));
  await writeFile(join(tree, 'usr', 'file'), 'content\n');
  const commit = ostree('commit', `--repo=${repo}`, `--tree=dir=${tree}`, '--orphan', '-s', 'sysroot only');
  const plan = await planLayer(new ArchiveRepo(repo), commit);
  const sysroot = ostree('ls', '-C', '-d', `--repo=${repo}`, commit, '/sysroot').split(/\s+/)[4]!;
  const names = plan.structure.map((entry) => entry.header.name);
  t.is(names.filter((name) => name === objectPath(sysroot, 'dirtree')).length, 1);
  t.is(names.filter((name) => name === 'sysroot').length, 1); // the skeleton's, not the tree's
  const image = await buildOscontainer({ repo, commit, version: '1', format: 'native' });
  t.teardown(() => image.dispose());
  const root = join(dir, 'root');
  await mkdir(root);
  await execa('tar', ['-xzf', image.layer.path, '-C', root]);
  t.regex(ostree('fsck', `--repo=${join(root, 'sysroot/ostree/repo')}`), /no errors found/);

  await writeFile(join(tree, 'sysroot', 'stray'), 'not here\n');
  const bad = ostree('commit', `--repo=${repo}`, `--tree=dir=${tree}`, '--orphan', '-s', 'stray');
  await t.throwsAsync(planLayer(new ArchiveRepo(repo), bad), { code: 'NATIVE_SYSROOT_NOT_EMPTY' } as never);
});
