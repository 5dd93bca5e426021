/**
 * Read objects straight from an archive-mode ostree repository: metadata objects are stored as they are
 * serialised (`objects/xx/<rest>.commit|.dirtree|.dirmeta|.commitmeta`), content objects as `.filez` (header, then
 * raw deflate: ostree `src/libostree/ostree-core.c` `_ostree_raw_file_to_archive_stream` at 46204655). This is
 * exact (the same bytes ostree would load) and avoids a process per object or a checkout of the whole tree.
 */
import { createReadStream } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import { promisify } from 'node:util';
import { createInflateRaw, inflateRaw } from 'node:zlib';
import { DevpivotError } from '../../core/errors.js';
import { archiveHeaderLength, type ContentHeader, parseArchiveHeader } from './objects.js';

const inflate = promisify(inflateRaw);

export type MetadataKind = 'commit' | 'commitmeta' | 'dirtree' | 'dirmeta';

/** What a repo's `config` says about its mode and parent (a parent repo may hold some of its objects). */
export async function repoMode(repo: string): Promise<{ mode: string; parent: string | null }> {
  const text = await readFile(join(repo, 'config'), 'utf8');
  const value = (key: string) => new RegExp(`^\\s*${key}\\s*=\\s*(.*?)\\s*$`, 'm').exec(text)?.[1] ?? null;
  return { mode: value('mode') ?? 'bare', parent: value('parent') };
}

export class ArchiveRepo {
  constructor(readonly path: string) {}

  objectPath(checksum: string, extension: MetadataKind | 'filez'): string {
    return join(this.path, 'objects', checksum.slice(0, 2), `${checksum.slice(2)}.${extension}`);
  }

  async readMetadata(kind: MetadataKind, checksum: string): Promise<Buffer> {
    try {
      return await readFile(this.objectPath(checksum, kind));
    } catch (error) {
      throw missing(this.path, `${checksum}.${kind}`, error);
    }
  }

  /** Detached metadata (signatures) exists only for some commits. */
  async readCommitMeta(commit: string): Promise<Buffer | null> {
    return readFile(this.objectPath(commit, 'commitmeta')).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
  }

  /** Only the header of a content object: a small read, not the content. */
  async readContentHeader(checksum: string): Promise<ContentHeader> {
    const path = this.objectPath(checksum, 'filez');
    const handle = await open(path).catch((error) => {
      throw missing(this.path, `${checksum}.filez`, error);
    });
    try {
      let buffer = Buffer.alloc(4096);
      let { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, 0);
      const length = archiveHeaderLength(buffer.subarray(0, bytesRead));
      if (length > bytesRead) {
        buffer = Buffer.alloc(length);
        ({ bytesRead } = await handle.read(buffer, 0, length, 0));
      }
      return parseArchiveHeader(buffer.subarray(0, bytesRead)).header;
    } finally {
      await handle.close();
    }
  }

  /** A whole content object's bytes, decompressed (inflate runs on libuv's thread pool). */
  async readContent(checksum: string, header: ContentHeader): Promise<Buffer> {
    return (await this.readContentDeflated(checksum, header)).raw;
  }

  /** A whole content object: its raw-deflate stream as stored, and the bytes it decompresses to. */
  async readContentDeflated(checksum: string, header: ContentHeader): Promise<{ raw: Buffer; deflated: Buffer }> {
    const file = await readFile(this.objectPath(checksum, 'filez'));
    const deflated = file.subarray(parseArchiveHeader(file).contentOffset);
    // One output buffer of the known size: zlib's default 16 KiB pieces would be concatenated at the end.
    const raw =
      header.size === 0
        ? Buffer.alloc(0)
        : await inflate(deflated, { chunkSize: header.size + 64 }).catch((error: Error) => {
            throw new DevpivotError('OSTREE_OBJECT_CORRUPT', `content object ${checksum}: ${error.message}`, {
              hint: `run 'ostree fsck --repo=${this.path}'`,
              cause: error,
            });
          });
    if (raw.byteLength !== header.size) throw sizeMismatch(checksum, header.size, raw.byteLength);
    return { raw, deflated };
  }

  /** A large content object, decompressed as a stream. */
  async *streamContent(checksum: string, header: ContentHeader): AsyncGenerator<Buffer> {
    const path = this.objectPath(checksum, 'filez');
    const prefix = Buffer.alloc(8);
    const handle = await open(path);
    try {
      await handle.read(prefix, 0, 8, 0);
    } finally {
      await handle.close();
    }
    const start = archiveHeaderLength(prefix);
    let total = 0;
    const inflater = createInflateRaw({ chunkSize: 1 << 20 });
    // pipeline() forwards a read error to the inflater, so the loop below throws it.
    pipeline(createReadStream(path, { start, highWaterMark: 1 << 20 }), inflater, () => {});
    for await (const chunk of inflater) {
      total += (chunk as Buffer).byteLength;
      yield chunk as Buffer;
    }
    if (total !== header.size) throw sizeMismatch(checksum, header.size, total);
  }
}

function missing(repo: string, object: string, cause: unknown): DevpivotError {
  return new DevpivotError('OSTREE_OBJECT_MISSING', `ostree repo ${repo} has no object ${object}`, {
    hint: `the commit is partial or its objects live elsewhere; check with 'ostree fsck --repo=${repo}'`,
    cause,
  });
}

function sizeMismatch(checksum: string, expected: number, actual: number): DevpivotError {
  return new DevpivotError(
    'OSTREE_OBJECT_CORRUPT',
    `content object ${checksum} holds ${actual} bytes, its header says ${expected}`,
    { hint: 'run ostree fsck on the source repository' },
  );
}
