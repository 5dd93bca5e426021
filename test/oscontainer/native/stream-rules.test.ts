/**
 * devpivot's native layer read as ostree-ext's importer reads it: as a stream, entry by entry, with the order rules
 * of `crates/ostree-ext/src/tar/import.rs` (bootc-dev/bootc 534c76ea; the rules and their lines in stream-rules.ts).
 * The checker is shown to refuse each broken order first, so a pass means the layer's order is what it accepts.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { buildOscontainer, type OscontainerImage } from '../../../src/oscontainer/build.js';
import { makeOsTree, type OsTree } from './os-tree.js';
import { importerError, type StreamEntry } from './stream-rules.js';
import { tarEntries } from './tar-entries.js';

let os: OsTree;
let image: OscontainerImage;
let entries: StreamEntry[];
let chunked: OscontainerImage;
let chunkedLayers: StreamEntry[][];

test.before(async () => {
  os = await makeOsTree();
  image = await buildOscontainer({ repo: os.repo, commit: 'testos/native', format: 'native' });
  entries = (await tarEntries(image.layer.path)).map(({ name, type }) => ({ name, type }));
  // Five packages for 4 bins: ostree-ext's packing runs (not one bin per package); the rest is unpackaged.
  const components = join(os.dir, 'components');
  await writeFile(
    components,
    [
      'hello 1 usr/bin/hello',
      'hello 1 usr/libexec/hello-again',
      'suid 1 usr/bin/suid',
      'big 1 usr/lib/big.bin',
      'doc 1 usr/share/doc/words.txt',
      'owned 1 usr/share/owned',
    ].join('\n'),
  );
  chunked = await buildOscontainer({ repo: os.repo, commit: 'testos/native', format: 'native', layers: 4, components });
  chunkedLayers = await Promise.all(
    chunked.layers.map(async (layer) => (await tarEntries(layer.path)).map(({ name, type }) => ({ name, type }))),
  );
});
test.after.always(async () => {
  await image?.dispose();
  await chunked?.dispose();
  if (os) await rm(os.dir, { recursive: true, force: true });
});

const isKind = (kind: string) => (entry: StreamEntry) =>
  entry.name.startsWith('sysroot/ostree/repo/objects/') && entry.name.endsWith(`.${kind}`);

test('the single native layer imports as a commit stream: commit first, each xattrs link before its file', (t) => {
  t.is(importerError(entries, 'commit'), null);
  const commit = entries.findIndex(isKind('commit'));
  const firstObject = entries.findIndex((e) => e.type !== 'directory' && e.name.startsWith('sysroot/ostree/repo/'));
  // The repo config precedes the commit; the importer skips it (filter_entry), so the commit is its first entry.
  t.true(entries[firstObject]!.name.endsWith('/config'));
  t.true(commit > firstObject);
  t.true(entries.filter(isKind('file')).length > 5, 'the tree has content objects');
});

test('the same layer is not an object set: its metadata objects are refused there, as import_objects does', (t) => {
  // import_object matches `commit` before it looks at the mode.
  t.is(importerError(entries, 'object-set'), 'Found multiple commit objects');
  const noCommit = entries.filter((e) => !/\.(commit|commitmeta)$/.test(e.name));
  t.regex(importerError(noCommit, 'object-set') ?? '', /^Found metadata object [0-9a-f]{64}\.(dirtree|dirmeta) in/);
  const contentOnly = entries.filter((e) => !/\.(commit|commitmeta|dirtree|dirmeta)$/.test(e.name));
  t.is(importerError(contentOnly, 'object-set'), null);
});

test('the checker refuses what the importer refuses: each broken order gives the importer message', (t) => {
  const link = entries.findIndex(isKind('file-xattrs-link'));
  const file = link + 1;
  t.true(isKind('file')(entries[file]!), 'the xattrs link is immediately followed by its object');

  const swapped = [...entries];
  [swapped[link], swapped[file]] = [swapped[file]!, swapped[link]!];
  t.is(importerError(swapped, 'commit'), 'Missing xattrs reference');

  const noFile = entries.filter((_, i) => i !== file);
  t.regex(importerError(noFile, 'commit') ?? '', /^(Found previous dangling xattrs|Object mismatch)/);

  const commitIndex = entries.findIndex(isKind('commit'));
  const commitLast = [...entries.filter((_, i) => i !== commitIndex), entries[commitIndex]!];
  t.regex(importerError(commitLast, 'commit') ?? '', /^Expected commit object, not /);
  t.is(importerError([...entries, entries[commitIndex]!], 'commit'), 'Found multiple commit objects');

  const content = entries.filter((e) => !/\.(commit|commitmeta|dirtree|dirmeta)$/.test(e.name));
  // An object set that carries one object twice: its link and file appended again.
  const pairStart = content.findIndex(isKind('file-xattrs-link'));
  const twice = [...content, content[pairStart]!, content[pairStart + 1]!];
  t.regex(importerError(twice, 'object-set') ?? '', /^Duplicate object: [0-9a-f]{64}$/);

  const badName = entries.map((e, i) =>
    i === file ? { ...e, name: e.name.replace(/\/([0-9a-f]{2})\//, '/$1x/') } : e,
  );
  t.regex(importerError(badName, 'commit') ?? '', /^Invalid checksum parent /);
});

test('a chunked image imports as ostree-ext reads it: the commit layer as a commit, each chunk as an object set', (t) => {
  t.true(chunkedLayers.length >= 3, `${chunkedLayers.length} layers`);
  t.is(importerError(chunkedLayers[0]!, 'commit'), null);
  for (const [i, layer] of chunkedLayers.entries()) {
    if (i > 0) t.is(importerError(layer, 'object-set'), null, `layer ${i}`);
  }
  // Together the layers carry each content object of the commit exactly once, as the single layer does.
  const objects = (list: StreamEntry[]) => list.filter(isKind('file')).map((e) => e.name);
  const all = chunkedLayers.flatMap(objects);
  t.is(new Set(all).size, all.length, 'no object in two layers');
  t.deepEqual([...all].sort(), objects(entries).sort());
  // A chunk is not a commit stream: the importer would refuse it as the first layer.
  t.regex(importerError(chunkedLayers[1]!, 'commit') ?? '', /^Expected commit object, not |^End of stream/);
});
