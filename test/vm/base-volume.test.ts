import test from 'ava';
import type { Connection } from '../../src/vm/libvirt/connection.js';
import { ensureBaseVolume } from '../../src/vm/libvirt/pool.js';
import type { StoragePool, StorageVolume } from '../../src/vm/libvirt/storage.js';

/** A pool holding one base volume whose reads behave as `read` says, recording deletions and creations. */
function fakes(read: () => Promise<Buffer>) {
  const calls: string[] = [];
  const volume = {
    name: 'devpivot-base-0123456789abcdef.qcow2',
    download: async () => {
      calls.push('download');
    },
    delete: async () => {
      calls.push('delete');
    },
    path: async () => '/pool/devpivot-base-0123456789abcdef.qcow2',
    free: () => {},
  } as unknown as StorageVolume;
  const pool = {
    lookupVolume: async () => volume,
    createVolume: async () => {
      calls.push('create');
      throw new Error('not expected');
    },
  } as unknown as StoragePool;
  const conn = {
    newStream: () => ({ receiveAll: read, free: () => {} }),
  } as unknown as Connection;
  return { calls, pool, conn };
}

const image = { path: '/x.qcow2', fileSize: 1024, virtualSize: 4096, version: 3, mtimeMs: 0 };

test('a base volume whose header cannot be read is never deleted (other sessions may be backed by it)', async (t) => {
  const { calls, pool, conn } = fakes(async () => {
    throw new Error('stream receive: I/O error');
  });
  const error = await t.throwsAsync(() => ensureBaseVolume(conn, pool, image, '0123456789abcdef'.repeat(4)));
  t.like(error, { code: 'IMAGE_UNREADABLE' });
  t.regex(error!.message, /I\/O error/);
  t.false(calls.includes('delete'));
  t.false(calls.includes('create'));
  t.is(calls.filter((c) => c === 'download').length, 3, 'read again before giving up');
});

test('a base volume that reads fine and has the magic is used as it is', async (t) => {
  const { calls, pool, conn } = fakes(async () => Buffer.from([0x51, 0x46, 0x49, 0xfb]));
  const base = await ensureBaseVolume(conn, pool, image, '0123456789abcdef'.repeat(4));
  t.like(base, { uploaded: false });
  t.deepEqual(calls, ['download']);
});

test('a base volume that reads fine without the magic is an interrupted upload: replaced', async (t) => {
  const { calls, pool, conn } = fakes(async () => Buffer.alloc(4));
  await t.throwsAsync(() => ensureBaseVolume(conn, pool, image, '0123456789abcdef'.repeat(4)), {
    message: 'not expected',
  });
  t.deepEqual(calls, ['download', 'delete', 'create']);
});
