/**
 * ostree's object formats (ostree `src/libostree/ostree-core.h` at 46204655: `OSTREE_COMMIT_GVARIANT_STRING`,
 * `OSTREE_TREE_GVARIANT_STRING`, `OSTREE_DIRMETA_GVARIANT_STRING`; `ostree-core.c` `_ostree_zlib_file_header_new`
 * and `variant_to_lenprefixed_buffer` for the archive-mode `.filez` header). uid, gid, mode, size and the commit
 * timestamp are stored big-endian inside the (little-endian) GVariant, so they are read from the raw bytes.
 */
import { arrayElements, decode, decodeVardict, parseType, tupleMembers, type VariantValue } from './gvariant.js';

const COMMIT = parseType('(a{sv}aya(say)sstayay)');
const DIRTREE = parseType('(a(say)a(sayay))');
const DIRMETA = parseType('(uuua(ayay))');
const FILE_HEADER = parseType('(tuuuusa(ayay))');
const FILES = parseType('a(say)');
const FILE_ENTRY = parseType('(say)');
const DIRS = parseType('a(sayay)');
const DIR_ENTRY = parseType('(sayay)');
const XATTRS = parseType('a(ayay)');

const hex = (bytes: Buffer) => bytes.toString('hex');

function checksum(bytes: Buffer, what: string): string {
  if (bytes.byteLength !== 32) throw new Error(`corrupt ostree object: ${what} is not a sha256 checksum`);
  return hex(bytes);
}

export interface CommitObject {
  metadata: Map<string, VariantValue>;
  /** Parent commit checksum, or null for a commit without one. */
  parent: string | null;
  subject: string;
  body: string;
  /** Seconds since the epoch (UTC). */
  timestamp: number;
  rootTree: string;
  rootMeta: string;
}

export function parseCommit(data: Buffer): CommitObject {
  const [metadata, parent, , subject, body, timestamp, tree, meta] = tupleMembers(COMMIT, data);
  return {
    metadata: decodeVardict(metadata!),
    parent: parent!.byteLength === 0 ? null : checksum(parent!, 'parent'),
    subject: decode('s', subject!) as string,
    body: decode('s', body!) as string,
    timestamp: Number(timestamp!.readBigUInt64BE(0)),
    rootTree: checksum(tree!, 'root tree'),
    rootMeta: checksum(meta!, 'root metadata'),
  };
}

export interface DirTreeObject {
  /** Sorted by name, as ostree writes them. */
  files: Array<{ name: string; checksum: string }>;
  dirs: Array<{ name: string; tree: string; meta: string }>;
}

export function parseDirTree(data: Buffer): DirTreeObject {
  const [files, dirs] = tupleMembers(DIRTREE, data);
  return {
    files: arrayElements(FILES, files!).map((entry) => {
      const [name, sum] = tupleMembers(FILE_ENTRY, entry);
      return { name: decode('s', name!) as string, checksum: checksum(sum!, 'file checksum') };
    }),
    dirs: arrayElements(DIRS, dirs!).map((entry) => {
      const [name, tree, meta] = tupleMembers(DIR_ENTRY, entry);
      return {
        name: decode('s', name!) as string,
        tree: checksum(tree!, 'dirtree checksum'),
        meta: checksum(meta!, 'dirmeta checksum'),
      };
    }),
  };
}

export interface DirMetaObject {
  uid: number;
  gid: number;
  /** Full st_mode, type bits included. */
  mode: number;
}

export function parseDirMeta(data: Buffer): DirMetaObject {
  const [uid, gid, mode] = tupleMembers(DIRMETA, data);
  return { uid: uid!.readUInt32BE(0), gid: gid!.readUInt32BE(0), mode: mode!.readUInt32BE(0) };
}

export const S_IFMT = 0o170000;
export const S_IFREG = 0o100000;
export const S_IFLNK = 0o120000;

export interface ContentHeader {
  /** Content size (0 for symlinks). */
  size: number;
  uid: number;
  gid: number;
  /** Full st_mode, type bits included. */
  mode: number;
  /** Empty unless a symlink. */
  symlink: string;
  /** The serialised `a(ayay)` exactly as stored (what ostree-ext writes to `.file-xattrs-link`). */
  xattrs: Buffer;
}

/** The xattrs as (name, value) pairs; names lose ostree's trailing nul. */
export function decodeXattrs(data: Buffer): Array<[string, Buffer]> {
  return (decode(XATTRS, data) as Array<[Buffer, Buffer]>).map(([name, value]) => {
    const end = name[name.byteLength - 1] === 0 ? name.byteLength - 1 : name.byteLength;
    return [name.toString('utf8', 0, end), value];
  });
}

/** Bytes needed to read the header of a `.filez` object: call with at least 8, then with what this returns. */
export function archiveHeaderLength(prefix: Buffer): number {
  if (prefix.byteLength < 8) throw new Error('corrupt .filez object: shorter than its length prefix');
  return 8 + prefix.readUInt32BE(0);
}

/**
 * Parse an archive-mode content object's header: a big-endian u32 length, 4 bytes of padding, then the
 * `(tuuuusa(ayay))` header. The raw-deflate content follows at `contentOffset`.
 */
export function parseArchiveHeader(data: Buffer): { header: ContentHeader; contentOffset: number } {
  const length = archiveHeaderLength(data);
  if (data.byteLength < length) throw new Error('corrupt .filez object: truncated header');
  const [size, uid, gid, mode, , symlink, xattrs] = tupleMembers(FILE_HEADER, data.subarray(8, length));
  return {
    header: {
      size: Number(size!.readBigUInt64BE(0)),
      uid: uid!.readUInt32BE(0),
      gid: gid!.readUInt32BE(0),
      mode: mode!.readUInt32BE(0),
      symlink: decode('s', symlink!) as string,
      xattrs: Buffer.from(xattrs!),
    },
    contentOffset: length,
  };
}
