/**
 * A deterministic tar stream of a directory tree, as an image layer: entries sorted by path, fixed mtime,
 * uid/gid 0, no user/group names, normalised modes (0755 directories and executables, 0644 other files). The same
 * tree always yields the same bytes, so the same ostree commit always yields the same layer digests.
 */
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
}

async function addEntry(pack: tar.Pack, entry: Entry): Promise<void> {
  const stats = await lstat(entry.absolute);
  const base = { mtime: FIXED_MTIME, uid: 0, gid: 0 };
  if (stats.isDirectory()) {
    await entryDone(pack, { ...base, name: `${entry.name}/`, type: 'directory', mode: 0o755 });
  } else if (stats.isSymbolicLink()) {
    const linkname = await readlink(entry.absolute);
    await entryDone(pack, { ...base, name: entry.name, type: 'symlink', mode: 0o777, linkname });
  } else if (stats.isFile()) {
    const mode = stats.mode & 0o111 ? 0o755 : 0o644;
    const header = { ...base, name: entry.name, type: 'file' as const, mode, size: stats.size };
    if (stats.size <= SMALL_FILE) {
      await entryDone(pack, header, await readFile(entry.absolute));
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

async function walk(root: string, relative: string, options: TarOptions, visit: (e: Entry) => Promise<void>) {
  const names = (await readdir(join(root, relative))).sort();
  for (const name of names) {
    const rel = relative ? `${relative}/${name}` : name;
    if (options.exclude?.(rel)) continue;
    const absolute = join(root, rel);
    await visit({ name: `${options.prefix}/${rel}`, absolute });
    if ((await lstat(absolute)).isDirectory()) await walk(root, rel, options, visit);
  }
}

/** Stream `root` as a tar archive; parent directories of `prefix` come first. */
export async function* tarDirectory(root: string, options: TarOptions): AsyncGenerator<Buffer> {
  const pack = tar.pack();
  const producer = (async () => {
    const parts = options.prefix.split('/');
    for (let i = 1; i <= parts.length; i++) {
      await entryDone(pack, {
        name: `${parts.slice(0, i).join('/')}/`,
        type: 'directory',
        mode: 0o755,
        mtime: FIXED_MTIME,
        uid: 0,
        gid: 0,
      });
    }
    await walk(root, '', options, (entry) => addEntry(pack, entry));
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
