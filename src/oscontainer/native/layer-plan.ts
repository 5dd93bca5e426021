/**
 * What the ostree layer holds, in ostree-ext's order (bootc-dev/bootc `crates/ostree-ext/src/tar/export.rs` at
 * 534c76ea: `export_final_chunk` → `write_commit` with `structure_only`, then `write_chunk` of the single chunk
 * `Chunking::new` makes in `src/chunking.rs`):
 *
 * 1. `./` with the root dirmeta; the repo skeleton (`write_repo_structure`): `sysroot/ostree/repo/objects/00..ff`,
 *    `extensions`, `refs/{heads,mirrors,remotes}`, `state`, `tmp/cache`, and `config` (`mode=bare-split-xattrs`);
 * 2. the commit object (and `.commitmeta`), the root dirmeta, then depth first (`append_dirtree`): each dirtree
 *    object, each subdirectory's dirmeta object and its directory entry (`/usr/etc` written as `/etc`; the root's
 *    `sysroot` skipped, the skeleton has it); `var/tmp` (01777) when the commit has none;
 * 3. every content object in checksum order (the chunk is a `BTreeMap`), each as its `.file-xattrs-link`, then
 *    the `.file` (regular file or symlink with the object's mode, uid and gid; xattrs other than
 *    `security.selinux` as PAX records), then one hard link to it per path in the tree (`append_content_hardlink`:
 *    zero-sized regular files are written as empty files instead).
 *
 * The plan holds every header and the metadata objects' bytes, so the archive's exact size is known up front.
 */
import { DevpivotError } from '../../core/errors.js';
import type { ArchiveRepo } from './archive-repo.js';
import {
  type CommitObject,
  type ContentHeader,
  decodeXattrs,
  parseCommit,
  parseDirMeta,
  parseDirTree,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
} from './objects.js';
import { END_OF_ARCHIVE, entrySize, type TarHeader } from './tar-writer.js';

const REPO = 'sysroot/ostree/repo';
/** `REPO_CONFIG` in export.rs. */
export const REPO_CONFIG = '[core]\nrepo_version=1\nmode=bare-split-xattrs\n';
const REPO_SUBDIRS = ['extensions', 'refs', 'refs/heads', 'refs/mirrors', 'refs/remotes', 'state', 'tmp', 'tmp/cache'];
/** Not exported as a PAX record: container runtimes do not show it (export.rs `append_tarstream_xattrs`). */
const SELINUX_XATTR = 'security.selinux';

export function objectPath(checksum: string, extension: string): string {
  return `${REPO}/objects/${checksum.slice(0, 2)}/${checksum.slice(2)}.${extension}`;
}

/** `/usr/etc` is written as `/etc` (export.rs `map_path_v1`), component-wise. */
export function tarPath(relative: string): string {
  return relative === 'usr/etc' || relative.startsWith('usr/etc/') ? relative.slice('usr/'.length) : relative;
}

export interface StructureEntry {
  header: TarHeader;
  /** Content of a regular file entry (metadata objects, the repo config). */
  data?: Buffer;
}

export interface ContentEntry {
  checksum: string;
  header: ContentHeader;
  /** Tree paths (relative, in traversal order) hard-linked to the object. */
  paths: string[];
}

export interface LayerPlan {
  commitChecksum: string;
  commit: CommitObject;
  structure: StructureEntry[];
  content: ContentEntry[];
  /** Exact size of the uncompressed tar stream. */
  size: number;
}

const dirHeader = (name: string, meta: { uid: number; gid: number; mode: number }): TarHeader => ({
  name,
  type: 'directory',
  mode: meta.mode & ~S_IFMT,
  uid: meta.uid,
  gid: meta.gid,
});
const defaultDir = (name: string) => dirHeader(name, { uid: 0, gid: 0, mode: 0o755 });
/** `tar_append_default_data`: root-owned, 0644. */
const defaultData = (name: string, data: Buffer): StructureEntry => ({
  header: { name, type: 'file', mode: 0o644, uid: 0, gid: 0, size: data.byteLength },
  data,
});

/** The object entry of a content object (without its hard links). */
export function objectHeader(entry: ContentEntry): TarHeader {
  const { header } = entry;
  const kind = header.mode & S_IFMT;
  if (kind !== S_IFREG && kind !== S_IFLNK) {
    throw new DevpivotError('OSTREE_OBJECT_CORRUPT', `content object ${entry.checksum} is neither file nor symlink`);
  }
  const pax = decodeXattrs(header.xattrs)
    .filter(([name]) => name !== SELINUX_XATTR)
    .map(([name, value]): [string, Buffer] => [`SCHILY.xattr.${name}`, value]);
  const base = { name: objectPath(entry.checksum, 'file'), mode: header.mode, uid: header.uid, gid: header.gid, pax };
  return kind === S_IFLNK
    ? { ...base, type: 'symlink', linkname: header.symlink }
    : { ...base, type: 'file', size: header.size };
}

export function xattrsLinkHeader(entry: ContentEntry): TarHeader {
  return defaultData(objectPath(entry.checksum, 'file-xattrs-link'), entry.header.xattrs).header;
}

/** The tree entry at `path`: a hard link to the object, or an empty file for a zero-sized one. */
export function treeHeader(entry: ContentEntry, path: string): TarHeader {
  const { header } = entry;
  const base = { name: tarPath(path), mode: header.mode, uid: header.uid, gid: header.gid };
  if ((header.mode & S_IFMT) === S_IFREG && header.size === 0) return { ...base, type: 'file', size: 0 };
  return { ...base, type: 'link', linkname: objectPath(entry.checksum, 'file') };
}

/** Run `fn` over `items` with at most `limit` in flight, keeping the order of results. */
async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export async function planLayer(repo: ArchiveRepo, commitChecksum: string): Promise<LayerPlan> {
  const commitBytes = await repo.readMetadata('commit', commitChecksum);
  const commit = parseCommit(commitBytes);
  const structure: StructureEntry[] = [];
  const wroteDirtree = new Set<string>();
  const wroteDirmeta = new Set<string>();
  const paths = new Map<string, string[]>();
  let wroteVarTmp = false;
  /** The dirtree of the skipped `/sysroot`, written at the end if no other empty directory wrote it. */
  let sysrootTree = null as { checksum: string; bytes: Buffer } | null;

  const rootMeta = await repo.readMetadata('dirmeta', commit.rootMeta);
  structure.push({ header: dirHeader('./', parseDirMeta(rootMeta)) });
  structure.push(...repoSkeleton());
  structure.push(defaultData(objectPath(commitChecksum, 'commit'), commitBytes));
  const detached = await repo.readCommitMeta(commitChecksum);
  if (detached) structure.push(defaultData(objectPath(commitChecksum, 'commitmeta'), detached));
  structure.push(defaultData(objectPath(commit.rootMeta, 'dirmeta'), rootMeta));
  wroteDirmeta.add(commit.rootMeta);

  const collect = async (dir: string, treeChecksum: string, isRoot: boolean) => {
    const bytes = await repo.readMetadata('dirtree', treeChecksum);
    if (!wroteDirtree.has(treeChecksum)) {
      wroteDirtree.add(treeChecksum);
      structure.push(defaultData(objectPath(treeChecksum, 'dirtree'), bytes));
    }
    const tree = parseDirTree(bytes);
    for (const file of tree.files) {
      const path = dir ? `${dir}/${file.name}` : file.name;
      const list = paths.get(file.checksum);
      if (list) list.push(path);
      else paths.set(file.checksum, [path]);
    }
    if (dir === 'var/tmp') wroteVarTmp = true;
    for (const sub of tree.dirs) {
      const path = dir ? `${dir}/${sub.name}` : sub.name;
      const metaBytes = await repo.readMetadata('dirmeta', sub.meta);
      if (!wroteDirmeta.has(sub.meta)) {
        wroteDirmeta.add(sub.meta);
        structure.push(defaultData(objectPath(sub.meta, 'dirmeta'), metaBytes));
      }
      if (isRoot && sub.name === 'sysroot') {
        const sysrootBytes = await repo.readMetadata('dirtree', sub.tree);
        const sysroot = parseDirTree(sysrootBytes);
        if (sysroot.files.length > 0 || sysroot.dirs.length > 0) {
          // ostree-ext would write these paths without the dirtree objects: an image that cannot be imported.
          throw new DevpivotError('NATIVE_SYSROOT_NOT_EMPTY', `commit ${commitChecksum} has content under /sysroot`, {
            hint: 'an ostree OS commit keeps /sysroot empty (the deployment mounts the physical root there)',
          });
        }
        sysrootTree = { checksum: sub.tree, bytes: sysrootBytes };
        continue;
      }
      structure.push({ header: dirHeader(tarPath(path), parseDirMeta(metaBytes)) });
      await collect(path, sub.tree, false);
    }
  };
  await collect('', commit.rootTree, true);
  // ostree-ext relies on another empty directory having written it; a commit without one would lack it.
  if (sysrootTree && !wroteDirtree.has(sysrootTree.checksum)) {
    structure.push(defaultData(objectPath(sysrootTree.checksum, 'dirtree'), sysrootTree.bytes));
  }
  if (!wroteVarTmp) structure.push({ header: dirHeader('var/tmp', { uid: 0, gid: 0, mode: 0o1777 }) });

  const checksums = [...paths.keys()].sort();
  const headers = await mapLimit(checksums, 64, (checksum) => repo.readContentHeader(checksum));
  const content = checksums.map((checksum, i) => ({ checksum, header: headers[i]!, paths: paths.get(checksum)! }));

  return { commitChecksum, commit, structure, content, size: planSize(structure, content) };
}

/** The repository skeleton an ostree layer starts with (export.rs `write_repo_structure`). */
function repoSkeleton(): StructureEntry[] {
  const entries: StructureEntry[] = [];
  for (const dir of ['sysroot', 'sysroot/ostree', REPO, `${REPO}/objects`]) entries.push({ header: defaultDir(dir) });
  for (let i = 0; i < 256; i++) {
    entries.push({ header: defaultDir(`${REPO}/objects/${i.toString(16).padStart(2, '0')}`) });
  }
  for (const dir of REPO_SUBDIRS) entries.push({ header: defaultDir(`${REPO}/${dir}`) });
  entries.push(defaultData(`${REPO}/config`, Buffer.from(REPO_CONFIG)));
  return entries;
}

function planSize(structure: StructureEntry[], content: ContentEntry[]): number {
  let size = END_OF_ARCHIVE.byteLength;
  for (const entry of structure) size += entrySize(entry.header);
  for (const entry of content) {
    size += entrySize(xattrsLinkHeader(entry)) + entrySize(objectHeader(entry));
    for (const path of entry.paths) size += entrySize(treeHeader(entry, path));
  }
  return size;
}

/**
 * The commit layer of a chunked image (export.rs `export_final_chunk`): the whole structure of `plan`, with only
 * `content` (what no chunk took) after it.
 */
export function commitLayerPlan(plan: LayerPlan, content: ContentEntry[]): LayerPlan {
  return { ...plan, content, size: planSize(plan.structure, content) };
}

/**
 * A chunk layer (export.rs `export_chunk`): the repository skeleton, then `content` (checksum order) with its
 * hard links; no commit, no directories of the tree (`create_parent_dirs` is off by default).
 */
export function chunkLayerPlan(plan: LayerPlan, content: ContentEntry[]): LayerPlan {
  const structure = repoSkeleton();
  return { ...plan, structure, content, size: planSize(structure, content) };
}
