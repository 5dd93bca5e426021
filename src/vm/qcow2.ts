import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DevpivotError } from '../core/errors.js';

const MAGIC = Buffer.from([0x51, 0x46, 0x49, 0xfb]); // "QFI\xfb"

export interface Qcow2Info {
  path: string;
  /** File size in bytes (what is uploaded). */
  fileSize: number;
  /** Guest-visible disk size in bytes (the overlay's capacity). */
  virtualSize: number;
  version: number;
  mtimeMs: number;
}

/** Check that `path` is a standalone qcow2 image (magic, version, no backing file) and read its sizes. */
export async function inspectQcow2(path: string): Promise<Qcow2Info> {
  const absolute = resolve(path);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(absolute, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT')
      throw new DevpivotError('IMAGE_NOT_FOUND', `image file ${absolute} does not exist`, {
        cause: error,
      });
    throw new DevpivotError('IMAGE_UNREADABLE', `cannot read image ${absolute}: ${(error as Error).message}`, {
      hint: code === 'EACCES' ? 'make the file readable by the user running devpivot' : undefined,
      cause: error,
    });
  }
  try {
    const header = Buffer.alloc(104);
    const { bytesRead } = await handle.read(header, 0, header.length, 0);
    const info = await handle.stat();
    if (bytesRead < 32 || !header.subarray(0, 4).equals(MAGIC)) {
      throw new DevpivotError('IMAGE_NOT_QCOW2', `${absolute} is not a qcow2 image (no QFI\\xfb magic)`, {
        hint: `convert it first: qemu-img convert -O qcow2 ${absolute} image.qcow2`,
      });
    }
    const version = header.readUInt32BE(4);
    const backingOffset = header.readBigUInt64BE(8);
    if (version < 2 || version > 3) {
      throw new DevpivotError('IMAGE_NOT_QCOW2', `${absolute} has unsupported qcow2 version ${version}`, {
        hint: 'use qcow2 version 2 or 3 (qemu-img convert -O qcow2)',
      });
    }
    if (backingOffset !== 0n) {
      throw new DevpivotError('IMAGE_HAS_BACKING_FILE', `${absolute} is an overlay with a backing file`, {
        hint: `flatten it first: qemu-img convert -O qcow2 ${absolute} flat.qcow2`,
      });
    }
    return {
      path: absolute,
      fileSize: info.size,
      virtualSize: Number(header.readBigUInt64BE(24)),
      version,
      mtimeMs: info.mtimeMs,
    };
  } finally {
    await handle.close();
  }
}

/**
 * SHA-256 of an image file, cached in `cacheFile` by path, size and mtime so a large base image is hashed once.
 */
export async function imageDigest(info: Qcow2Info, cacheFile: string): Promise<string> {
  const key = `${info.path}\t${info.fileSize}\t${info.mtimeMs}`;
  let cache: Record<string, string> = {};
  try {
    cache = JSON.parse(await readFile(cacheFile, 'utf8')) as Record<string, string>;
  } catch {}
  const known = cache[key];
  if (known) return known;
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(info.path)) hash.update(chunk as Buffer);
  const digest = hash.digest('hex');
  cache[key] = digest;
  try {
    await mkdir(dirname(cacheFile), { recursive: true });
    await writeFile(cacheFile, JSON.stringify(cache, null, 1));
  } catch {}
  return digest;
}

export function digestCacheFile(stateDirectory: string): string {
  return join(stateDirectory, 'image-digests.json');
}

export async function fileSize(path: string): Promise<number> {
  return (await stat(path)).size;
}
