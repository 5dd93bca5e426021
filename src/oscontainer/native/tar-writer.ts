/**
 * Tar headers as ostree-ext's tar writer emits them: GNU headers (`tar::Header::new_gnu`, alexcrichton/tar-rs
 * `src/header.rs` at 2349b494), a `././@LongLink` entry (`L` for names, `K` for link names) when a path does not
 * fit the 100-byte field (`prepare_header_path` in `src/builder.rs`), and PAX `x` records for xattrs
 * (`append_pax_extensions` in `src/pax.rs`), whose values are raw bytes. tar-stream (used by the legacy layer)
 * can only write PAX values as UTF-8 text, and xattrs such as `security.capability` are binary, hence this file.
 * Timestamps are the fixed `FIXED_MTIME`; user and group names are left empty.
 */
import { FIXED_MTIME } from '../tar-layer.js';

export type TarType = 'file' | 'directory' | 'symlink' | 'link';

export interface TarHeader {
  name: string;
  type: TarType;
  /** Permission bits (and setuid/setgid/sticky); the type bits are dropped. */
  mode: number;
  uid: number;
  gid: number;
  /** Content bytes that follow (regular files only). */
  size?: number;
  /** Target of a symlink, or the archive path a hard link points at. */
  linkname?: string;
  /** PAX extended records written before the entry, e.g. `SCHILY.xattr.user.foo`. */
  pax?: Array<[string, Buffer]>;
}

const BLOCK = 512;
const TYPEFLAG: Record<TarType, number> = { file: 0x30, link: 0x31, symlink: 0x32, directory: 0x35 };
const MTIME = Math.floor(FIXED_MTIME.getTime() / 1000);

/** Two zero blocks end an archive. */
export const END_OF_ARCHIVE = Buffer.alloc(2 * BLOCK);

const padded = (size: number) => Math.ceil(size / BLOCK) * BLOCK;

/** Zero bytes that pad `size` bytes of content to a whole block. */
export function paddingFor(size: number): Buffer {
  return Buffer.alloc(padded(size) - size);
}

/** Octal, zero-padded, nul-terminated; base-256 (GNU numeric extension) when it does not fit. */
function writeNumber(block: Buffer, offset: number, width: number, value: number): void {
  const octal = value.toString(8);
  if (octal.length < width) {
    block.write(octal.padStart(width - 1, '0'), offset, 'latin1');
    block[offset + width - 1] = 0;
    return;
  }
  block[offset] = 0x80;
  let rest = BigInt(value);
  for (let i = offset + width - 1; i > offset; i--) {
    block[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
}

function block(fields: {
  name: Buffer;
  typeflag: number;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  linkname?: Buffer;
}): Buffer {
  const out = Buffer.alloc(BLOCK);
  fields.name.copy(out, 0, 0, 100);
  writeNumber(out, 100, 8, fields.mode);
  writeNumber(out, 108, 8, fields.uid);
  writeNumber(out, 116, 8, fields.gid);
  writeNumber(out, 124, 12, fields.size);
  writeNumber(out, 136, 12, MTIME);
  out[156] = fields.typeflag;
  fields.linkname?.copy(out, 157, 0, 100);
  out.write('ustar  \0', 257, 'latin1'); // GNU magic "ustar " and version " \0"
  out.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of out) sum += byte;
  out.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return out;
}

/** A `././@LongLink` entry carrying a long name (`L`) or link name (`K`), nul-terminated. */
function longLink(typeflag: number, value: Buffer): Buffer[] {
  const data = Buffer.concat([value, Buffer.from([0])]);
  const header = block({
    name: Buffer.from('././@LongLink'),
    typeflag,
    mode: 0o644,
    uid: 0,
    gid: 0,
    size: data.byteLength,
  });
  return [header, data, paddingFor(data.byteLength)];
}

/** PAX records `"<len> <key>=<value>\n"`, where len counts the whole record including its own digits. */
export function paxRecords(records: Array<[string, Buffer]>): Buffer {
  const parts: Buffer[] = [];
  for (const [key, value] of records) {
    const rest = 3 + Buffer.byteLength(key) + value.byteLength; // space, '=', newline
    let digits = 1;
    while (String(rest + digits).length > digits) digits++;
    parts.push(Buffer.from(`${rest + digits} ${key}=`), value, Buffer.from('\n'));
  }
  return Buffer.concat(parts);
}

/** Every block that precedes the entry's content: PAX, long-name entries, then the header itself. */
export function encodeHeader(header: TarHeader): Buffer {
  const parts: Buffer[] = [];
  if (header.pax && header.pax.length > 0) {
    const data = paxRecords(header.pax);
    parts.push(
      block({ name: Buffer.from('PaxHeader'), typeflag: 0x78, mode: 0o644, uid: 0, gid: 0, size: data.byteLength }),
      data,
      paddingFor(data.byteLength),
    );
  }
  const name = Buffer.from(header.name);
  const linkname = header.linkname === undefined ? undefined : Buffer.from(header.linkname);
  if (name.byteLength > 100) parts.push(...longLink(0x4c, name));
  if (linkname && linkname.byteLength > 100) parts.push(...longLink(0x4b, linkname));
  parts.push(
    block({
      name,
      typeflag: TYPEFLAG[header.type],
      mode: header.mode & 0o7777,
      uid: header.uid,
      gid: header.gid,
      size: header.type === 'file' ? (header.size ?? 0) : 0,
      linkname,
    }),
  );
  return Buffer.concat(parts);
}

/** Bytes the entry takes in the archive: its header blocks and its padded content. */
export function entrySize(header: TarHeader): number {
  let size = BLOCK;
  if (header.pax && header.pax.length > 0) size += BLOCK + padded(paxRecords(header.pax).byteLength);
  const name = Buffer.byteLength(header.name);
  if (name > 100) size += BLOCK + padded(name + 1);
  const link = header.linkname === undefined ? 0 : Buffer.byteLength(header.linkname);
  if (link > 100) size += BLOCK + padded(link + 1);
  if (header.type === 'file') size += padded(header.size ?? 0);
  return size;
}
