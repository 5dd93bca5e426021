/**
 * The native layer's contents against ostree-ext's writer (bootc-dev/bootc `crates/ostree-ext/src/tar/export.rs`
 * at 534c76ea), checked with an independent tar reader and the real ostree CLI's view of the commit.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { buildOscontainer, type OscontainerImage } from '../../../src/oscontainer/build.js';
import { writeLayerFile } from '../../../src/oscontainer/layer-file.js';
import { ArchiveRepo } from '../../../src/oscontainer/native/archive-repo.js';
import { planLayer } from '../../../src/oscontainer/native/layer-plan.js';
import { streamLayer } from '../../../src/oscontainer/native/layer-tar.js';
import { decodeXattrs } from '../../../src/oscontainer/native/objects.js';
import { CAPABILITY, LONG_DIR, LONG_TARGET, lsCommit, makeOsTree, type OsTree, USER_XATTR } from './os-tree.js';
import { type Entry, tarEntries } from './tar-entries.js';

const REPO = 'sysroot/ostree/repo';
const objectName = (checksum: string, ext: string) =>
  `${REPO}/objects/${checksum.slice(0, 2)}/${checksum.slice(2)}.${ext}`;

interface LsEntry {
  type: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  checksum: string;
  meta: string | null;
  path: string;
  target: string | null;
}

/** Parse `ostree ls -R -X -C` lines: `d00755 0 0 0 <tree> <meta> { xattrs } /path` or `-00644 … <csum> { … } /p`. */
function parseLs(text: string): LsEntry[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const match = /^(.)(\d+) (\d+) (\d+) +(\d+) ([0-9a-f]{64})(?: ([0-9a-f]{64}))? \{.*\} (\/.*?)(?: -> (.*))?$/.exec(
        line,
      );
      if (!match) throw new Error(`unexpected ostree ls line: ${line}`);
      return {
        type: match[1]!,
        mode: Number.parseInt(match[2]!, 8),
        uid: Number(match[3]),
        gid: Number(match[4]),
        size: Number(match[5]),
        checksum: match[6]!,
        meta: match[7] ?? null,
        path: match[8]!.slice(1),
        target: match[9] ?? null,
      };
    });
}

const tarPath = (path: string) => (path === 'usr/etc' || path.startsWith('usr/etc/') ? path.slice(4) : path);

let os: OsTree;
let image: OscontainerImage;
let entries: Entry[];
let ls: LsEntry[];

test.before(async () => {
  os = await makeOsTree();
  image = await buildOscontainer({ repo: os.repo, commit: 'testos/native', format: 'native' });
  entries = await tarEntries(image.layer.path);
  ls = parseLs(lsCommit(os.repo, os.commit));
});
test.after.always(async () => {
  await image?.dispose();
  if (os) await rm(os.dir, { recursive: true, force: true });
});

test('it starts as ostree-ext does: ./, the repo skeleton, the bare-split-xattrs config, commit, root dirmeta', async (t) => {
  t.is(image.format, 'native');
  t.is(image.commit, os.commit);
  t.like(entries[0], { name: './', type: 'directory', mode: 0o755, uid: 0, gid: 0 });
  const skeleton = [
    'sysroot',
    'sysroot/ostree',
    REPO,
    `${REPO}/objects`,
    ...Array.from({ length: 256 }, (_, i) => `${REPO}/objects/${i.toString(16).padStart(2, '0')}`),
    ...['extensions', 'refs', 'refs/heads', 'refs/mirrors', 'refs/remotes', 'state', 'tmp', 'tmp/cache'].map(
      (dir) => `${REPO}/${dir}`,
    ),
  ];
  t.deepEqual(
    entries.slice(1, 1 + skeleton.length).map((e) => [e.name, e.type, e.mode]),
    skeleton.map((name) => [name, 'directory', 0o755]),
  );
  const [config, commit, rootMeta] = entries.slice(1 + skeleton.length);
  t.like(config, { name: `${REPO}/config`, type: 'file', mode: 0o644, uid: 0, gid: 0 });
  t.is(config!.data!.toString(), '[core]\nrepo_version=1\nmode=bare-split-xattrs\n');
  t.is(commit!.name, objectName(os.commit, 'commit'));
  t.deepEqual(
    commit!.data,
    await readFile(join(os.repo, 'objects', os.commit.slice(0, 2), `${os.commit.slice(2)}.commit`)),
  );
  t.is(rootMeta!.name, objectName(ls[0]!.meta!, 'dirmeta'));
});

test('every directory and metadata object comes before the content, with the modes of the commit', (t) => {
  const firstContent = entries.findIndex((e) => e.name.endsWith('.file-xattrs-link'));
  t.true(firstContent > 0);
  const head = entries.slice(0, firstContent);
  t.false(head.some((e) => e.name.endsWith('.file')));
  const dirs = ls.filter((e) => e.type === 'd' && e.path !== '' && e.path !== 'sysroot');
  const treeDirs = head.filter((e) => e.type === 'directory' && !e.name.startsWith('sysroot') && e.name !== './');
  t.deepEqual(treeDirs.map((e) => e.name).sort(), [...dirs.map((d) => tarPath(d.path)), 'var/tmp'].sort());
  for (const dir of dirs) {
    const entry = treeDirs.find((e) => e.name === tarPath(dir.path))!;
    t.deepEqual([entry.mode, entry.uid, entry.gid], [dir.mode, dir.uid, dir.gid], dir.path);
    const parent = dir.path.split('/').slice(0, -1).join('/');
    if (parent) t.true(head.indexOf(treeDirs.find((e) => e.name === tarPath(parent))!) < head.indexOf(entry));
  }
  t.like(
    treeDirs.find((e) => e.name === 'usr/lib/private'),
    { mode: 0o700 },
  );
  t.like(
    treeDirs.find((e) => e.name === 'var/tmp'),
    { mode: 0o1777, uid: 0, gid: 0 },
  );
  t.is(entries.filter((e) => e.name === 'sysroot').length, 1);
  t.false(entries.some((e) => e.name === 'usr/etc' || e.name.startsWith('usr/etc/')));
  // Exactly the dirtree and dirmeta objects of the commit, each once.
  const objects = (ext: string) => head.filter((e) => e.name.endsWith(`.${ext}`)).map((e) => e.name);
  const allDirs = ls.filter((e) => e.type === 'd');
  t.deepEqual(objects('dirtree').sort(), [...new Set(allDirs.map((d) => objectName(d.checksum, 'dirtree')))].sort());
  t.deepEqual(objects('dirmeta').sort(), [...new Set(allDirs.map((d) => objectName(d.meta!, 'dirmeta')))].sort());
});

test('content: xattrs link, object, hard links, in checksum order; links point at the object of their path', (t) => {
  const firstContent = entries.findIndex((e) => e.name.endsWith('.file-xattrs-link'));
  const checksums: string[] = [];
  const treeEntries = new Map<string, { entry: Entry; checksum: string }>();
  let i = firstContent;
  while (i < entries.length) {
    const link = entries[i]!;
    const match = /objects\/(..)\/(.{62})\.file-xattrs-link$/.exec(link.name);
    if (!match) return t.fail(`expected an xattrs link at ${i}, found ${link.name}`);
    const checksum = match[1]! + match[2]!;
    checksums.push(checksum);
    t.like(link, { type: 'file', mode: 0o644, uid: 0, gid: 0 });
    const object = entries[i + 1]!;
    t.is(object.name, objectName(checksum, 'file'));
    i += 2;
    while (i < entries.length && !entries[i]!.name.endsWith('.file-xattrs-link')) {
      treeEntries.set(entries[i]!.name, { entry: entries[i]!, checksum });
      i++;
    }
  }
  t.deepEqual(checksums, [...checksums].sort());
  t.is(new Set(checksums).size, checksums.length);
  const files = ls.filter((e) => e.type !== 'd');
  t.deepEqual([...treeEntries.keys()].sort(), files.map((f) => tarPath(f.path)).sort());
  for (const file of files) {
    const { entry, checksum } = treeEntries.get(tarPath(file.path))!;
    t.is(checksum, file.checksum, file.path);
    t.deepEqual([entry.mode, entry.uid, entry.gid], [file.mode, file.uid, file.gid], file.path);
    const object = entries.find((e) => e.name === objectName(checksum, 'file'))!;
    t.deepEqual([object.mode, object.uid, object.gid], [file.mode, file.uid, file.gid], file.path);
    if (file.type === 'l') {
      t.like(object, { type: 'symlink', linkname: file.target }, file.path);
      t.like(entry, { type: 'link', linkname: objectName(checksum, 'file') }, file.path);
    } else if (file.size === 0) {
      t.like(object, { type: 'file', size: 0 }, file.path);
      t.like(entry, { type: 'file', size: 0 }, file.path); // export.rs: no hard links to empty files
    } else {
      t.like(object, { type: 'file', size: file.size }, file.path);
      t.like(entry, { type: 'link', linkname: objectName(checksum, 'file'), size: 0 }, file.path);
    }
  }
  // The cases that need more than a 100-byte ustar field, and shared content.
  t.like(treeEntries.get(`${LONG_DIR}/long-name.txt`)?.entry, { type: 'link' });
  t.like(
    entries.find((e) => e.type === 'symlink' && e.linkname === LONG_TARGET),
    { uid: 0 },
  );
  t.truthy(treeEntries.get('usr/share/ünïcødé'));
  t.is(treeEntries.get('usr/bin/hello')!.checksum, treeEntries.get('usr/libexec/hello-again')!.checksum);
  t.like(treeEntries.get('etc/os-release')?.entry, { type: 'link' });
  t.like(treeEntries.get('usr/bin/suid')?.entry, { mode: 0o4755 });
  t.like(treeEntries.get('usr/share/owned')?.entry, { mode: 0o640, uid: 1000, gid: 1000 });
});

test('xattrs: all of them in .file-xattrs-link, all but security.selinux as PAX records on the object', (t) => {
  const caps = ls.find((e) => e.path === 'usr/share/caps')!;
  const link = entries.find((e) => e.name === objectName(caps.checksum, 'file-xattrs-link'))!;
  t.deepEqual(decodeXattrs(link.data!), [
    ['security.capability', CAPABILITY],
    ['security.selinux', Buffer.from('system_u:object_r:bin_t:s0\0')],
    ['user.devpivot', USER_XATTR],
  ]);
  const object = entries.find((e) => e.name === objectName(caps.checksum, 'file'))!;
  t.deepEqual(object.paxKeys.sort(), ['SCHILY.xattr.security.capability', 'SCHILY.xattr.user.devpivot']);
  // Objects without xattrs: an empty link file (the serialised empty array) and no PAX records.
  const hello = ls.find((e) => e.path === 'usr/bin/hello')!;
  t.like(
    entries.find((e) => e.name === objectName(hello.checksum, 'file-xattrs-link')),
    { size: 0 },
  );
  t.deepEqual(entries.find((e) => e.name === objectName(hello.checksum, 'file'))!.paxKeys, []);
  // Hard links never carry xattrs: the extractor gives them the object's inode.
  t.deepEqual(entries.find((e) => e.name === 'usr/share/caps')!.paxKeys, []);
});

test('labels and config as encapsulate.rs writes them; the same commit always gives the same digest', async (t) => {
  const config = JSON.parse(image.config.bytes.toString());
  t.deepEqual(config.config.Labels, {
    'containers.bootc': '1',
    'org.opencontainers.image.version': '3.0',
    'ostree.bootable': 'true',
    'ostree.commit': os.commit,
    'ostree.final-diffid': image.layer.diffId,
    'ostree.linux': '6.1.0-test',
  });
  t.deepEqual(config.config.Cmd, ['/usr/bin/hello', '--greet']);
  t.is(config.architecture, 'amd64');
  t.is(config.os, 'linux');
  t.is(config.created, os.timestamp);
  t.deepEqual(config.rootfs, { type: 'layers', diff_ids: [image.layer.diffId] });
  t.deepEqual(config.history, [{ created: os.timestamp, created_by: os.subject }]);
  t.is(image.manifest.manifest.layers.length, 1);
  t.is(image.manifest.manifest.annotations, undefined); // Docker schema 2 has no annotations

  const again = await buildOscontainer({
    repo: os.repo,
    commit: os.commit,
    format: 'native',
    gzip: { workers: 1, chunkSize: 64 * 1024 },
  });
  const oci = await buildOscontainer({ repo: os.repo, commit: os.commit, format: 'native', oci: true });
  const legacy = await buildOscontainer({ repo: os.repo, commit: os.commit });
  t.teardown(() => Promise.all([again.dispose(), oci.dispose(), legacy.dispose()]));
  t.is(again.layer.diffId, image.layer.diffId);
  t.is(again.config.digest, image.config.digest);
  t.is(oci.layer.digest, image.layer.digest);
  t.not(oci.digest, image.digest);
  t.deepEqual(oci.manifest.manifest.annotations, config.config.Labels);
  t.is(legacy.format, 'legacy');
  t.not(legacy.layer.diffId, image.layer.diffId);
  // Default gzip settings twice: byte-identical blobs, one manifest digest.
  const third = await buildOscontainer({ repo: os.repo, commit: os.commit, format: 'native' });
  t.teardown(() => third.dispose());
  t.is(third.digest, image.digest);
  t.is(third.layer.digest, image.layer.digest);
});

test('a commit that says ostree.bootable=false keeps it; an unknown ref is OSTREE_COMMIT_NOT_FOUND', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const commit = execFileSync(
    'ostree',
    [
      'commit',
      `--repo=${os.repo}`,
      '--branch=testos/not-bootable',
      `--tree=dir=${join(os.tree, 'usr', 'bin')}`,
      '--add-metadata-string=version=0.1',
      '--add-metadata=ostree.bootable=false',
      '--subject=',
    ],
    { encoding: 'utf8' },
  ).trim();
  const image = await buildOscontainer({ repo: os.repo, commit, format: 'native' });
  t.teardown(() => image.dispose());
  const config = JSON.parse(image.config.bytes.toString());
  t.is(config.config.Labels['ostree.bootable'], 'false');
  t.is(config.config.Labels['containers.bootc'], '1');
  t.is(config.config.Labels['ostree.linux'], undefined);
  t.is(config.history[0].created_by, `ostree export of commit ${commit}`);
  await t.throwsAsync(buildOscontainer({ repo: os.repo, commit: 'no/such/ref', format: 'native' }), {
    code: 'OSTREE_COMMIT_NOT_FOUND',
  } as never);
});

test('the tar bytes do not depend on how objects are read: joined, compressed again, or streamed', async (t) => {
  const repo = new ArchiveRepo(os.repo);
  const plan = await planLayer(repo, os.commit);
  const variants = [
    { reuseDeflate: false },
    { wholeMax: 1024 }, // big.bin and words.txt streamed through inflate and compressed again
  ];
  for (const [i, options] of variants.entries()) {
    const out = join(os.dir, `variant-${i}.tar.gz`);
    let last = 0;
    const layer = await writeLayerFile(streamLayer(repo, plan, options), out, {
      total: plan.size,
      onProgress: (done) => (last = done),
    });
    t.is(layer.diffId, image.layer.diffId, JSON.stringify(options));
    t.is(last, plan.size, 'the planned size is exact');
    t.not(layer.digest, image.layer.digest); // other compressed bytes, the same tar
  }
});
