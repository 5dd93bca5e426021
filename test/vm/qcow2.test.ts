import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { DevpivotError } from '../../src/core/errors.js';
import { imageDigest, inspectQcow2 } from '../../src/vm/qcow2.js';
import { tempDir } from '../helpers/temp.js';

const dir = tempDir('devpivot-qcow2-');

test('a real qcow2 (qemu-img) is accepted with its virtual size', async (t) => {
  const path = join(dir, 'ok.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', path, '64M']);
  const info = await inspectQcow2(path);
  t.is(info.virtualSize, 64 * 1024 * 1024);
  t.is(info.version, 3);
  t.true(info.fileSize > 0);
});

test('missing file, raw file and overlay are refused with codes and hints', async (t) => {
  const missing = await t.throwsAsync(inspectQcow2(join(dir, 'nope.qcow2')), { instanceOf: DevpivotError });
  t.is((missing as DevpivotError).code, 'IMAGE_NOT_FOUND');
  const raw = join(dir, 'disk.raw');
  writeFileSync(raw, Buffer.alloc(4096));
  const notQcow = await t.throwsAsync(inspectQcow2(raw), { instanceOf: DevpivotError });
  t.is((notQcow as DevpivotError).code, 'IMAGE_NOT_QCOW2');
  t.regex((notQcow as DevpivotError).hint ?? '', /qemu-img convert/);
  const base = join(dir, 'base.qcow2');
  const overlay = join(dir, 'overlay.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', base, '8M']);
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', base, '-F', 'qcow2', overlay]);
  const layered = await t.throwsAsync(inspectQcow2(overlay), { instanceOf: DevpivotError });
  t.is((layered as DevpivotError).code, 'IMAGE_HAS_BACKING_FILE');
});

test('the content digest is cached by path, size and mtime', async (t) => {
  const path = join(dir, 'hash.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', path, '1M']);
  const info = await inspectQcow2(path);
  const cache = join(dir, 'digests.json');
  const first = await imageDigest(info, cache);
  t.regex(first, /^[0-9a-f]{64}$/);
  // a poisoned cache entry proves the second call did not re-hash
  const key = `${info.path}\t${info.fileSize}\t${info.mtimeMs}`;
  writeFileSync(cache, JSON.stringify({ [key]: 'f'.repeat(64) }));
  t.is(await imageDigest(info, cache), 'f'.repeat(64));
});
