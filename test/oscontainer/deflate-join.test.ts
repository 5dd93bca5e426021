/**
 * Joining finished deflate streams (deflate-blocks.ts) and gzip with joined pieces (parallel-gzip.ts), checked
 * by zlib's own inflate and by gzip(1): every block type, every end-bit alignment, dictionaries across a join.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants, deflateRawSync, gunzipSync, inflateRawSync } from 'node:zlib';
import test from 'ava';
import { DeflateFormatError, findFinalBlock, joinable } from '../../src/oscontainer/deflate-blocks.js';
import { type GzipInput, parallelGzip } from '../../src/oscontainer/parallel-gzip.js';

/** Text-like bytes: compressible, with long matches and varied literals. */
function text(size: number, seed: number): Buffer {
  const words = ['ostree', 'commit', 'dirtree', 'bootc', 'layer', 'gzip', 'deflate', 'pivot', `w${seed}`];
  const out: string[] = [];
  let length = 0;
  let x = seed;
  while (length < size) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const word = words[x % words.length]! + (x % 7 === 0 ? `\n${x}` : '');
    out.push(word);
    length += word.length + 1;
  }
  return Buffer.from(out.join(' ').slice(0, size));
}

const inputs = [
  ['one byte', Buffer.from('x')],
  ['short text', text(100, 1)],
  ['text', text(300_000, 2)],
  ['random', randomBytes(200_000)],
  ['zeros', Buffer.alloc(150_000)],
] as const;
const settings = [
  { level: 0 },
  { level: 1 },
  { level: 6 },
  { level: 9 },
  { level: 6, strategy: constants.Z_FIXED },
  { level: 6, strategy: constants.Z_HUFFMAN_ONLY },
  { level: 6, strategy: constants.Z_RLE },
];

test('a joined stream is followed by more deflate data: zlib inflates the concatenation exactly', (t) => {
  const after = text(5000, 9);
  const alignments = new Set<number>();
  for (const [name, input] of inputs) {
    for (const options of settings) {
      const stream = deflateRawSync(input, options);
      const block = findFinalBlock(stream);
      t.is(Math.ceil(block.endBit / 8), stream.byteLength, `${name} ${JSON.stringify(options)}: ends with the data`);
      alignments.add(block.endBit & 7);
      const joined = joinable(stream);
      t.deepEqual(stream, deflateRawSync(input, options), 'the input is left alone');
      const out = inflateRawSync(Buffer.concat([joined, deflateRawSync(after)]));
      t.true(out.equals(Buffer.concat([input, after])), `${name} ${JSON.stringify(options)}`);
    }
  }
  t.true(alignments.size >= 4, `end bits seen: ${[...alignments].join(',')}`); // several tail cases exercised
});

test('corrupt or truncated streams are refused, not misread', (t) => {
  const stream = deflateRawSync(text(50_000, 3));
  t.throws(() => findFinalBlock(stream.subarray(0, stream.byteLength - 10)), { instanceOf: DeflateFormatError });
  t.throws(() => findFinalBlock(Buffer.from([0x07])), { message: /reserved block type/ });
  t.throws(() => findFinalBlock(Buffer.from([0x00, 0x05, 0x00, 0x00, 0x00])), { message: /stored block length/ });
});

async function gzip(pieces: GzipInput[], options: Parameters<typeof parallelGzip>[1]): Promise<Buffer> {
  async function* source() {
    yield* pieces;
  }
  const out: Buffer[] = [];
  for await (const chunk of parallelGzip(source(), options)) out.push(chunk);
  return Buffer.concat(out);
}

test('parallel gzip with joined pieces: one valid member, gzip(1) agrees, the same bytes for any worker count', async (t) => {
  const big = text(400_000, 4);
  const noise = randomBytes(100_000);
  const pieces: GzipInput[] = [
    text(3000, 5),
    { raw: big, deflated: deflateRawSync(big, { level: 6 }) },
    { raw: noise, deflated: deflateRawSync(noise, { level: 6 }) }, // stored blocks: ends byte-aligned
    text(2_500_000, 6), // several chunks after a join: their dictionaries come from the joined content
    { raw: Buffer.from('z'), deflated: deflateRawSync(Buffer.from('z'), { level: 9 }) },
  ];
  const expected = Buffer.concat(pieces.map((p) => (p instanceof Uint8Array ? p : p.raw)));
  const one = await gzip(pieces, { workers: 1, chunkSize: 256 * 1024 });
  const three = await gzip(pieces, { workers: 3, chunkSize: 256 * 1024 });
  t.true(one.equals(three));
  t.true(gunzipSync(one).equals(expected));
  t.true(execFileSync('gzip', ['-dc'], { input: one, maxBuffer: 1 << 26 }).equals(expected));
  // The joined streams are in the output as they were: far smaller than compressing the noise again would be
  // worth, and no larger than the pieces plus a few bytes per join.
  const compressedAlone = await gzip([expected], { workers: 1, chunkSize: 256 * 1024 });
  t.true(Math.abs(one.byteLength - compressedAlone.byteLength) < compressedAlone.byteLength * 0.1);
});

test('a corrupt joined piece fails the gzip stream with the reason', async (t) => {
  const raw = text(100_000, 7);
  const deflated = deflateRawSync(raw).subarray(0, 1000);
  await t.throwsAsync(gzip([{ raw, deflated }], { workers: 1 }), { message: /invalid deflate stream/ });
});
