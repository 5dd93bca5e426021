/**
 * A layer file in zstd (src/oscontainer/layer-file.ts): the real `zstd -dc` gives back the tar whose sha256 is the
 * diff_id, the blob's sha256 is the digest, and zstd's exit is waited for, not cut short (a build that killed zstd
 * as its output ended failed with "exit null").
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { writeLayerFile } from '../../src/oscontainer/layer-file.js';
import { tempDir } from '../helpers/temp.js';

/** 48 MiB in 1 MiB pieces that compress about as a tree of binaries does (half repeated, half varied). */
async function* pieces(): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < 48; i++) {
    const piece = Buffer.alloc(1024 * 1024);
    for (let j = 0; j < piece.length; j += 64) piece.writeUInt32LE((i * 2654435761 + j * 40503) >>> 0, j);
    yield piece;
  }
}

test('zstd: the blob decompresses to the tar of the diff_id, its sha256 is the digest, every time', async (t) => {
  const dir = tempDir('devpivot-layer-file-');
  const expected = createHash('sha256');
  for await (const piece of pieces()) expected.update(piece);
  const diffId = `sha256:${expected.digest('hex')}`;
  for (let round = 0; round < 4; round++) {
    const path = join(dir, `layer-${round}.tar.zst`);
    let last = 0;
    const layer = await writeLayerFile(pieces(), path, {
      compression: 'zstd',
      total: 48 * 1024 * 1024,
      onProgress: (done) => {
        last = done;
      },
    });
    t.is(layer.diffId, diffId);
    t.is(last, 48 * 1024 * 1024);
    const blob = readFileSync(path);
    t.is(layer.size, blob.byteLength);
    t.is(layer.digest, `sha256:${createHash('sha256').update(blob).digest('hex')}`);
    const tar = execFileSync('zstd', ['-dc', path], { maxBuffer: 64 * 1024 * 1024 });
    t.is(`sha256:${createHash('sha256').update(tar).digest('hex')}`, diffId);
  }
});
