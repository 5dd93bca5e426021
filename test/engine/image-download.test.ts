/**
 * `url:` images over real HTTP on 127.0.0.1: progress, a resume after a cut connection (the server sees the Range
 * and sends only the rest), a server that ignores Range, a checksum mismatch that deletes the file, and two runs
 * wanting the same image at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import { DevpivotError } from '../../src/core/errors.js';
import { downloadImage } from '../../src/engine/image-download.js';
import { tempDir } from '../helpers/temp.js';

const image = randomBytes(9 * 1024 * 1024 + 123);
// Compared with Buffer.equals: ava's deepEqual of megabytes takes minutes.
const sha256 = createHash('sha256').update(image).digest('hex');

interface Served {
  url: string;
  ranges: (string | undefined)[];
  /** Cut the next response after this many bytes. */
  cutAfter?: number;
  /** Answer 200 with everything even when asked for a range. */
  ignoreRange?: boolean;
  close(): Promise<void>;
}

async function serve(): Promise<Served> {
  const state: Omit<Served, 'url' | 'close'> = { ranges: [] };
  const server: Server = createServer((req, res) => {
    const range = req.headers.range;
    state.ranges.push(range);
    const from = range && !state.ignoreRange ? Number(/^bytes=(\d+)-$/.exec(range)![1]) : 0;
    if (from >= image.length) {
      res.writeHead(416, { 'Content-Range': `bytes */${image.length}` }).end();
      return;
    }
    const body = image.subarray(from);
    res.writeHead(from > 0 ? 206 : 200, {
      'Content-Length': body.length,
      ...(from > 0 ? { 'Content-Range': `bytes ${from}-${image.length - 1}/${image.length}` } : {}),
    });
    const cut = state.cutAfter;
    if (cut === undefined) {
      res.end(body);
      return;
    }
    state.cutAfter = undefined;
    res.write(body.subarray(0, cut), () => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/disk.qcow2`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

const options = (served: Served, target: string, progress: [number, number | null][] = []) => ({
  name: 'rhcos',
  url: served.url,
  sha256,
  target,
  signal: new AbortController().signal,
  onProgress: (done: number, total: number | null) => progress.push([done, total]),
});

test('a download reports progress up to the whole size and lands only once checked', async (t) => {
  const served = await serve();
  t.teardown(() => served.close());
  const target = join(tempDir('devpivot-download-', t), 'disk.qcow2');
  const progress: [number, number | null][] = [];
  await downloadImage(options(served, target, progress));
  t.true((await readFile(target)).equals(image), 'the image, byte for byte');
  t.deepEqual(progress.at(-1), [image.length, image.length]);
  t.true(progress.length >= 3, `progress while it came: ${JSON.stringify(progress)}`);
  t.deepEqual(served.ranges, [undefined]);
  await t.throwsAsync(stat(`${target}.partial`), { code: 'ENOENT' });
});

test('a cut connection keeps what arrived; the next run asks for the rest and gets only that', async (t) => {
  const served = await serve();
  t.teardown(() => served.close());
  const target = join(tempDir('devpivot-download-', t), 'disk.qcow2');
  const cut = 3 * 1024 * 1024;
  served.cutAfter = cut;
  const error = await t.throwsAsync(downloadImage(options(served, target)), { instanceOf: DevpivotError });
  t.is(error.code, 'IMAGE_DOWNLOAD');
  t.regex(error.hint ?? '', /run again to resume/);
  const kept = (await stat(`${target}.partial`)).size;
  t.true(kept > 0 && kept <= cut, `kept ${kept}`);
  await t.throwsAsync(stat(target), { code: 'ENOENT' }, 'nothing unchecked at the target');
  const progress: [number, number | null][] = [];
  await downloadImage(options(served, target, progress));
  t.deepEqual(served.ranges, [undefined, `bytes=${kept}-`]);
  t.deepEqual(progress[0], [kept, image.length], 'progress starts where the partial file ends');
  t.true((await readFile(target)).equals(image), 'the image, byte for byte');
});

test('a server that ignores Range is read again from the start', async (t) => {
  const served = await serve();
  t.teardown(() => served.close());
  const target = join(tempDir('devpivot-download-', t), 'disk.qcow2');
  served.cutAfter = 1024 * 1024;
  await t.throwsAsync(downloadImage(options(served, target)), { code: 'IMAGE_DOWNLOAD' });
  served.ignoreRange = true;
  await downloadImage(options(served, target));
  t.is(served.ranges.length, 2);
  t.truthy(served.ranges[1], 'it asked for a range');
  t.true((await readFile(target)).equals(image), 'the 200 replaced the partial file instead of being appended');
});

test('a complete partial file is checked without a body (416), and a wrong sha256 deletes the file', async (t) => {
  const served = await serve();
  t.teardown(() => served.close());
  const target = join(tempDir('devpivot-download-', t), 'disk.qcow2');
  const wrong = { ...options(served, target), sha256: '0'.repeat(64) };
  const error = await t.throwsAsync(downloadImage(wrong), { instanceOf: DevpivotError });
  t.is(error.code, 'IMAGE_CHECKSUM');
  t.true(error.message.includes(sha256) && error.message.includes(wrong.sha256), error.message);
  t.true(error.message.includes(served.url), 'names the URL');
  await t.throwsAsync(stat(`${target}.partial`), { code: 'ENOENT' }, 'a wrong file is not kept for a resume');
  await t.throwsAsync(stat(target), { code: 'ENOENT' });
  // A whole image left as .partial (say the rename was interrupted): the server has nothing more to send.
  await downloadImage(options(served, `${target}-first`));
  await rename(`${target}-first`, `${target}.partial`);
  await downloadImage(options(served, target));
  t.is(served.ranges.at(-1), `bytes=${image.length}-`);
  t.true((await readFile(target)).equals(image), 'the image, byte for byte');
});

test('two downloads of one image at once: one GET, the second waits and uses the checked file', async (t) => {
  const served = await serve();
  t.teardown(() => served.close());
  const target = join(tempDir('devpivot-download-', t), 'disk.qcow2');
  await writeFile(`${target}.lock`, '999999999\n'); // a run that died holding the lock: taken over
  const [first, second] = [options(served, target), options(served, target)];
  await Promise.all([downloadImage(first), downloadImage(second)]);
  t.deepEqual(served.ranges, [undefined], 'the image was fetched once');
  t.true((await readFile(target)).equals(image), 'the image, byte for byte');
  await t.throwsAsync(stat(`${target}.lock`), { code: 'ENOENT' }, 'the lock is released');
});
