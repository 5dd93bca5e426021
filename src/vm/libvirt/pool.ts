import { createReadStream } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DevpivotError } from '../../core/errors.js';
import { baseVolumeName } from '../domain-xml.js';
import type { Qcow2Info } from '../qcow2.js';
import { poolPath, poolXml, volumeXml } from '../storage-xml.js';
import type { Connection } from './connection.js';
import type { StoragePool, StorageVolume } from './storage.js';

export const POOL_NAME = 'devpivot';
const SYSTEM_POOL_PATH = '/var/lib/libvirt/images/devpivot';
const QCOW2_MAGIC = Buffer.from([0x51, 0x46, 0x49, 0xfb]);
/** The qcow2 header is uploaded last: a volume without the magic is an interrupted upload. */
const HEADER_BYTES = 512;

/** Where a new `devpivot` dir pool goes: the system images dir, or the session user's images dir when local. */
export function defaultPoolPath(uri: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.DEVPIVOT_POOL_PATH) return env.DEVPIVOT_POOL_PATH;
  const url = /^([a-z0-9+]+):\/\/([^/]*)(\/[^?]*)?/.exec(uri);
  const host = url?.[2] ?? '';
  const path = url?.[3] ?? '';
  if (path.startsWith('/system')) return SYSTEM_POOL_PATH;
  if (path.startsWith('/session') && host === '') {
    return join(env.XDG_DATA_HOME ?? join(homedir(), '.local', 'share'), 'libvirt', 'images', 'devpivot');
  }
  return undefined;
}

/** The `devpivot` storage pool: looked up, or defined, built, started and marked autostart. */
export async function ensurePool(conn: Connection, path?: string): Promise<{ pool: StoragePool; path: string }> {
  let pool = await conn.lookupPool(POOL_NAME);
  if (!pool) {
    const target = path ?? defaultPoolPath(conn.uri);
    if (!target)
      throw new DevpivotError('VM_POOL_PATH_UNKNOWN', `no storage pool '${POOL_NAME}' on ${conn.uri}`, {
        hint: `create one there (virsh pool-define-as ${POOL_NAME} dir --target DIR; virsh pool-build/start), or set DEVPIVOT_POOL_PATH`,
      });
    pool = await conn.definePool(poolXml(POOL_NAME, target));
    await pool.build();
    await pool.setAutostart(true);
  }
  if (!(await pool.isActive())) await pool.start();
  const actual = poolPath(await pool.xml());
  if (!actual) throw new DevpivotError('VM_POOL_PATH_UNKNOWN', `storage pool '${POOL_NAME}' has no target path`);
  return { pool, path: actual };
}

async function* fileRange(path: string, start: number, end: number, signal?: AbortSignal): AsyncGenerator<Buffer> {
  if (end <= start) return;
  for await (const chunk of createReadStream(path, { start, end: end - 1, highWaterMark: 256 * 1024 })) {
    // Stopping between chunks ends the stream send (Stream.sendAll aborts the transfer on the error).
    signal?.throwIfAborted();
    yield chunk as Buffer;
  }
}

async function uploadRange(
  conn: Connection,
  volume: StorageVolume,
  path: string,
  start: number,
  end: number,
  onProgress?: (sent: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  const stream = conn.newStream(false);
  try {
    await volume.upload(stream, start, end - start);
    await stream.sendAll(fileRange(path, start, end, signal), onProgress);
  } finally {
    stream.free();
  }
}

/** How often a base volume's header is read before giving up: a read error is never taken as "not qcow2". */
const MAGIC_READ_ATTEMPTS = 3;

/**
 * Whether a volume starts with the qcow2 magic. Throws when it cannot be read: the caller must not take a
 * transient error for an interrupted upload and delete a base volume other sessions' overlays are backed by.
 */
export async function hasQcow2Magic(conn: Connection, volume: StorageVolume): Promise<boolean> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= MAGIC_READ_ATTEMPTS; attempt++) {
    const stream = conn.newStream(false);
    try {
      await volume.download(stream, 0, 4);
      return (await stream.receiveAll(4)).equals(QCOW2_MAGIC);
    } catch (error) {
      lastError = error;
    } finally {
      stream.free();
    }
    await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
  }
  throw new DevpivotError(
    'IMAGE_UNREADABLE',
    `cannot read the header of base volume ${volume.name}: ${(lastError as Error).message}`,
    {
      hint: 'it was left alone (other sessions may use it); retry, or check the pool with virsh vol-info',
      cause: lastError,
    },
  );
}

/**
 * A base image as a volume named by its content hash, uploaded once through a libvirt stream (so remote URIs work).
 * The body goes first and the 512-byte header last: an interrupted upload lacks the qcow2 magic and is replaced.
 */
export async function ensureBaseVolume(
  conn: Connection,
  pool: StoragePool,
  image: Qcow2Info,
  sha256: string,
  onProgress?: (done: number, total: number) => void,
  signal?: AbortSignal,
): Promise<{ name: string; path: string; uploaded: boolean }> {
  const name = baseVolumeName(sha256);
  const existing = await pool.lookupVolume(name);
  if (existing) {
    try {
      // Read, and no magic: an upload that was interrupted (the header goes last). A read that fails throws.
      if (await hasQcow2Magic(conn, existing)) return { name, path: await existing.path(), uploaded: false };
      await existing.delete();
    } finally {
      existing.free();
    }
  }
  const volume = await pool.createVolume(volumeXml({ name, capacity: image.fileSize, format: 'raw', mode: '0644' }));
  try {
    const header = Math.min(HEADER_BYTES, image.fileSize);
    await uploadRange(
      conn,
      volume,
      image.path,
      header,
      image.fileSize,
      (sent) => onProgress?.(sent, image.fileSize),
      signal,
    );
    await uploadRange(conn, volume, image.path, 0, header, undefined, signal);
    onProgress?.(image.fileSize, image.fileSize);
    return { name, path: await volume.path(), uploaded: true };
  } catch (error) {
    await volume.delete().catch(() => {});
    throw error;
  } finally {
    volume.free();
  }
}

/**
 * The uid:gid qemu runs as on this daemon: the DAC security model's base label in the capabilities
 * (`<baselabel type='kvm'>+64055:+64055</baselabel>`, qemu.conf's user and group); undefined without one.
 */
export function qemuOwner(capabilities: string): { uid: number; gid: number } | undefined {
  const dac = /<secmodel>\s*<model>dac<\/model>[\s\S]*?<\/secmodel>/.exec(capabilities)?.[0];
  const label = dac && /<baselabel[^>]*>\+?(\d+):\+?(\d+)<\/baselabel>/.exec(dac);
  return label ? { uid: Number(label[1]), gid: Number(label[2]) } : undefined;
}

/**
 * A small raw volume holding `content` (the Ignition config, which holds keys and pull secrets): 0600, owned by
 * the user qemu runs as (found in the capabilities), so qemu reads it and no other local user does.
 */
export async function createDataVolume(
  conn: Connection,
  pool: StoragePool,
  name: string,
  content: Buffer,
): Promise<string> {
  const owner = qemuOwner(await conn.capabilities());
  const volume = await pool.createVolume(
    volumeXml({
      name,
      capacity: Math.max(1, content.length),
      format: 'raw',
      mode: '0600',
      ...(owner ? { owner } : {}),
    }),
  );
  try {
    const stream = conn.newStream(false);
    try {
      await volume.upload(stream, 0, content.length);
      await stream.sendAll(
        (async function* () {
          yield content;
        })(),
      );
    } finally {
      stream.free();
    }
    return await volume.path();
  } catch (error) {
    await volume.delete().catch(() => {});
    throw error;
  } finally {
    volume.free();
  }
}
