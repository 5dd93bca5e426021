/**
 * A deterministic tar stream of a directory tree, as an image layer: entries sorted by path, fixed mtime,
 * uid/gid 0, no user/group names, normalised modes (0755 directories and executables, 0644 other files). The same
 * tree always yields the same bytes, so the same ostree commit always yields the same layer digests.
 */

import type { Stats } from 'node:fs';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import tar from 'tar-stream';

/** Layer timestamps: the Unix epoch, like other reproducible image builders. */
export const FIXED_MTIME = new Date(0);
const SMALL_FILE = 1024 * 1024;

export interface TarOptions {
  /** Path inside the archive for the tree's root, without leading or trailing slash, e.g. `srv/repo`. */
  prefix: string;
  /** Names (relative to the root) left out, e.g. ostree's `.lock`. */
  exclude?: (relativePath: string) => boolean;
}

interface Entry {
  name: string;
  absolute: string;
  stats: Stats;
}

/** Files read ahead of the packer: hides per-file I/O latency (ostree repos are thousands of small objects). */
const READ_AHEAD = 32;

/** Every entry under `root`, sorted by path, with its stats (lstat of one directory's entries in parallel). */
async function collect(root: string, relative: string, options: TarOptions, out: Entry[]): Promise<void> {
  const names = (await readdir(join(root, relative))).sort();
  const entries = await Promise.all(
    names
      .map((name) => (relative ? `${relative}/${name}` : name))
      .filter((rel) => !options.exclude?.(rel))
      .map(async (rel) => {
        const absolute = join(root, rel);
        return { name: `${options.prefix}/${rel}`, absolute, stats: await lstat(absolute), rel };
      }),
  );
  for (const { rel, ...entry } of entries) {
    out.push(entry);
    if (entry.stats.isDirectory()) await collect(root, rel, options, out);
  }
}

export interface TarPlan {
  entries: Entry[];
  /** Exact size of the tar stream in bytes. */
  size: number;
}

/** List what `tarDirectory` will write, and the archive's exact size (for progress). */
export async function planTar(root: string, options: TarOptions): Promise<TarPlan> {
  const entries: Entry[] = [];
  await collect(root, '', options, entries);
  const prefixDirs = options.prefix.split('/').length;
  let size = 512 * prefixDirs + 1024; // parent directories and the end-of-archive blocks
  for (const entry of entries) {
    const content = entry.stats.isFile() ? Math.ceil(entry.stats.size / 512) * 512 : 0;
    size += 512 + content;
  }
  return { entries, size };
}

const base = { mtime: FIXED_MTIME, uid: 0, gid: 0 };

async function addEntry(pack: tar.Pack, entry: Entry, content: Promise<Buffer> | undefined): Promise<void> {
  const { stats } = entry;
  if (stats.isDirectory()) {
    await entryDone(pack, { ...base, name: `${entry.name}/`, type: 'directory', mode: 0o755 });
  } else if (stats.isSymbolicLink()) {
    const linkname = await readlink(entry.absolute);
    await entryDone(pack, { ...base, name: entry.name, type: 'symlink', mode: 0o777, linkname });
  } else if (stats.isFile()) {
    const mode = stats.mode & 0o111 ? 0o755 : 0o644;
    const header = { ...base, name: entry.name, type: 'file' as const, mode, size: stats.size };
    if (content) {
      const data = await content;
      if (data.byteLength !== stats.size) {
        throw new Error(`${entry.absolute} changed size while building the layer`);
      }
      await entryDone(pack, header, data);
    } else {
      let sink!: ReturnType<tar.Pack['entry']>;
      const finished = new Promise<void>((resolve, reject) => {
        sink = pack.entry(header, (error) => (error ? reject(error) : resolve()));
      });
      for await (const chunk of createReadStream(entry.absolute, { highWaterMark: 256 * 1024 })) {
        if (!sink.write(chunk)) await new Promise<void>((resolve) => sink.once('drain', () => resolve()));
      }
      (sink as unknown as { end(): void }).end();
      await finished;
    }
  }
  // Sockets, fifos and devices have no place in a layer of an ostree repo: skipped.
}

function entryDone(pack: tar.Pack, header: Parameters<tar.Pack['entry']>[0], content?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error | null) => (error ? reject(error) : resolve());
    if (content) pack.entry(header, content, done);
    else pack.entry(header, done);
  });
}

const isSmallFile = (entry: Entry) => entry.stats.isFile() && entry.stats.size <= SMALL_FILE;

/** Stream `root` as a tar archive; parent directories of `prefix` come first. Pass `plan` to reuse a listing. */
export async function* tarDirectory(root: string, options: TarOptions, plan?: TarPlan): AsyncGenerator<Buffer> {
  const pack = tar.pack();
  const producer = (async () => {
    const { entries } = plan ?? (await planTar(root, options));
    const parts = options.prefix.split('/');
    for (let i = 1; i <= parts.length; i++) {
      await entryDone(pack, { ...base, name: `${parts.slice(0, i).join('/')}/`, type: 'directory', mode: 0o755 });
    }
    const reads = new Map<number, Promise<Buffer>>();
    let next = 0;
    for (let i = 0; i < entries.length; i++) {
      for (; next < entries.length && next < i + READ_AHEAD; next++) {
        if (isSmallFile(entries[next]!)) {
          const read = readFile(entries[next]!.absolute);
          read.catch(() => {}); // awaited in order below
          reads.set(next, read);
        }
      }
      const content = reads.get(i);
      reads.delete(i);
      await addEntry(pack, entries[i]!, content);
    }
    pack.finalize();
  })().catch((error: unknown) => {
    pack.destroy(error as Error);
    throw error;
  });
  producer.catch(() => {}); // observed below; avoids an unhandled rejection when the consumer stops early
  try {
    for await (const chunk of pack) yield chunk as Buffer;
  } finally {
    if (!pack.destroyed) pack.destroy();
  }
  await producer;
}
