/**
 * Make a finished raw-deflate stream (RFC 1951) joinable: clear the final block's BFINAL bit and end it with an
 * empty stored block, so the stream stops on a byte boundary and more deflate data can follow it. This is the
 * technique of zlib's `examples/gzjoin.c` (madler/zlib 01f800a0); zlib there learns the bit positions from
 * `inflate(Z_BLOCK)`'s `data_type`, which Node's zlib does not expose, so this file walks the blocks itself:
 * Huffman symbols are decoded (table lookup) but nothing is written out. It lets the native layer reuse the
 * deflate streams an archive-mode ostree repo already holds instead of compressing the content again.
 */

const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const CODE_LENGTH_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
/** The empty stored block after byte alignment: LEN 0, NLEN 0xffff. */
const STORED_EMPTY = [0x00, 0x00, 0xff, 0xff];

export class DeflateFormatError extends Error {}

const fail = (what: string): never => {
  throw new DeflateFormatError(`invalid deflate stream: ${what}`);
};

/** Codes up to this many bits are found with one lookup; longer ones go through a second, small table. */
const PRIMARY_BITS = 10;

interface Table {
  /**
   * Indexed by the next `bits` input bits: `symbol << 4 | code length`, 0 for no such code, or (negative, for
   * a longer code) `~(subtable offset << 4 | subtable bits)`, the subtable indexed by the following bits.
   */
  entries: Int32Array;
  bits: number;
}

/** A canonical Huffman decoding table (RFC 1951 3.2.2), indexed by bit-reversed codes. */
function buildTable(lengths: ArrayLike<number>): Table {
  let maxBits = 0;
  const counts = new Int32Array(16);
  for (let i = 0; i < lengths.length; i++) {
    const length = lengths[i]!;
    counts[length]!++;
    if (length > maxBits) maxBits = length;
  }
  counts[0] = 0;
  const next = new Int32Array(16);
  let code = 0;
  for (let bits = 1; bits <= 15; bits++) {
    code = (code + counts[bits - 1]!) << 1;
    next[bits] = code;
  }
  const bits = Math.max(1, Math.min(maxBits, PRIMARY_BITS));
  const subBits = Math.max(0, maxBits - bits);
  const codes = new Int32Array(lengths.length);
  const prefixes = new Set<number>();
  for (let symbol = 0; symbol < lengths.length; symbol++) {
    const length = lengths[symbol]!;
    if (length === 0) continue;
    const value = next[length]!++;
    if (value >= 1 << length) fail('over-subscribed Huffman code');
    let reversed = 0;
    for (let i = 0; i < length; i++) reversed |= ((value >> i) & 1) << (length - 1 - i);
    codes[symbol] = reversed;
    if (length > bits) prefixes.add(reversed & ((1 << bits) - 1));
  }
  const entries = new Int32Array((1 << bits) + prefixes.size * (1 << subBits));
  let free = 1 << bits;
  for (const prefix of [...prefixes].sort((a, b) => a - b)) {
    entries[prefix] = ~((free << 4) | subBits);
    free += 1 << subBits;
  }
  for (let symbol = 0; symbol < lengths.length; symbol++) {
    const length = lengths[symbol]!;
    if (length === 0) continue;
    const reversed = codes[symbol]!;
    const entry = (symbol << 4) | length;
    if (length <= bits) {
      for (let index = reversed; index < 1 << bits; index += 1 << length) entries[index] = entry;
    } else {
      const sub = ~entries[reversed & ((1 << bits) - 1)]! >> 4;
      const step = 1 << (length - bits);
      for (let index = reversed >> bits; index < 1 << subBits; index += step) entries[sub + index] = entry;
    }
  }
  return { entries, bits };
}

/** The entry for the code at the start of `buf` (at least 15 bits, or all that is left). */
function lookup(table: Int32Array, mask: number, bits: number, buf: number): number {
  const entry = table[buf & mask]!;
  if (entry >= 0) return entry;
  const link = ~entry;
  return table[(link >> 4) + ((buf >>> bits) & ((1 << (link & 15)) - 1))]!;
}

const FIXED_LITERALS = buildTable(Array.from({ length: 288 }, (_, i) => (i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8)));
const FIXED_DISTANCES = buildTable(new Array(30).fill(5));

export interface FinalBlock {
  /** Bit offset of the last block's header (its first bit is BFINAL). */
  headerBit: number;
  /** Bit offset just after the last block's end-of-block code (or stored data). */
  endBit: number;
}

/** Walk every block of `data`; returns where the final one starts and ends. */
export function findFinalBlock(data: Uint8Array): FinalBlock {
  let pos = 0;
  let bitBuf = 0;
  let bitCount = 0;
  const refill = () => {
    while (bitCount <= 24 && pos < data.length) {
      bitBuf |= data[pos++]! << bitCount;
      bitCount += 8;
    }
  };
  const take = (n: number): number => {
    if (bitCount < n) refill();
    if (bitCount < n) fail('truncated');
    const value = bitBuf & ((1 << n) - 1);
    bitBuf >>>= n;
    bitCount -= n;
    return value;
  };
  const decode = (table: Table): number => {
    if (bitCount < 15) refill();
    const entry = lookup(table.entries, (1 << table.bits) - 1, table.bits, bitBuf);
    const length = entry & 15;
    if (length === 0 || length > bitCount) fail('bad Huffman code');
    bitBuf >>>= length;
    bitCount -= length;
    return entry >> 4;
  };
  const bitOffset = () => pos * 8 - bitCount;

  for (;;) {
    const headerBit = bitOffset();
    const final = take(1);
    const type = take(2);
    if (type === 0) {
      // Stored: skip to the byte boundary, LEN and NLEN, then LEN bytes.
      take(bitCount & 7);
      const len = take(16);
      if ((take(16) ^ 0xffff) !== len) fail('stored block length check');
      // Whole bytes still in the bit buffer belong to the stored data.
      const buffered = bitCount >> 3;
      const skip = len - Math.min(len, buffered);
      for (let i = 0; i < Math.min(len, buffered); i++) take(8);
      if (pos + skip > data.length) fail('truncated stored block');
      pos += skip;
    } else if (type === 1 || type === 2) {
      let literals = FIXED_LITERALS;
      let distances = FIXED_DISTANCES;
      if (type === 2) {
        const hlit = take(5) + 257;
        const hdist = take(5) + 1;
        const hclen = take(4) + 4;
        const codeLengths = new Uint8Array(19);
        for (let i = 0; i < hclen; i++) codeLengths[CODE_LENGTH_ORDER[i]!] = take(3);
        const codeTable = buildTable(codeLengths);
        const lengths = new Uint8Array(hlit + hdist);
        for (let i = 0; i < lengths.length; ) {
          const symbol = decode(codeTable);
          if (symbol < 16) lengths[i++] = symbol;
          else {
            let repeat: number;
            let value = 0;
            if (symbol === 16) {
              if (i === 0) fail('repeat with no previous length');
              value = lengths[i - 1]!;
              repeat = 3 + take(2);
            } else repeat = symbol === 17 ? 3 + take(3) : 11 + take(7);
            if (i + repeat > lengths.length) fail('code lengths overrun');
            lengths.fill(value, i, i + repeat);
            i += repeat;
          }
        }
        if (lengths[256] === 0) fail('no end-of-block code');
        literals = buildTable(lengths.subarray(0, hlit));
        distances = buildTable(lengths.subarray(hlit));
      }
      // The hot loop, with the bit buffer in locals: most of the time goes here.
      const lit = literals.entries;
      const litBits = literals.bits;
      const litMask = (1 << litBits) - 1;
      const dist = distances.entries;
      const distBits = distances.bits;
      const distMask = (1 << distBits) - 1;
      let buf = bitBuf;
      let count = bitCount;
      let at = pos;
      for (;;) {
        if (count < 15) {
          while (count <= 24 && at < data.length) {
            buf |= data[at++]! << count;
            count += 8;
          }
        }
        let entry = lookup(lit, litMask, litBits, buf);
        let length = entry & 15;
        if (length === 0 || length > count) fail('bad Huffman code');
        buf >>>= length;
        count -= length;
        const symbol = entry >> 4;
        if (symbol < 256) continue;
        if (symbol === 256) break;
        const lengthCode = symbol - 257;
        if (lengthCode >= 29) fail('bad length code');
        // Up to 5 length extra bits, a distance code of up to 15 bits and 13 extra bits: refill in between.
        if (count < 20) {
          while (count <= 24 && at < data.length) {
            buf |= data[at++]! << count;
            count += 8;
          }
        }
        const extra = LENGTH_EXTRA[lengthCode]!;
        if (extra > count) fail('truncated');
        buf >>>= extra;
        count -= extra;
        entry = lookup(dist, distMask, distBits, buf);
        length = entry & 15;
        if (length === 0 || length > count) fail('bad Huffman code');
        buf >>>= length;
        count -= length;
        const distance = entry >> 4;
        if (distance >= 30) fail('bad distance code');
        if (distance >= 4) {
          const bits = (distance >> 1) - 1;
          if (count < bits) {
            while (count <= 24 && at < data.length) {
              buf |= data[at++]! << count;
              count += 8;
            }
            if (count < bits) fail('truncated');
          }
          buf >>>= bits;
          count -= bits;
        }
      }
      bitBuf = buf;
      bitCount = count;
      pos = at;
    } else fail('reserved block type');
    if (final) return { headerBit, endBit: bitOffset() };
  }
}

/**
 * What makes `data` joinable, given its final block: `data` up to the final block's header byte (unchanged,
 * shared), then a copy of the rest with BFINAL cleared and an empty stored block appended, so the stream ends
 * byte-aligned and not final.
 */
export function joinPieces(data: Uint8Array, block: FinalBlock): [Uint8Array, Buffer] {
  const used = block.endBit & 7;
  const bytes = Math.ceil(block.endBit / 8);
  const start = block.headerBit >> 3;
  // The stored block's 3 header bits (all zero) fit after the last used bit, or need one more byte.
  const extra = used === 0 || used > 5 ? 1 : 0;
  const tail = Buffer.allocUnsafe(bytes - start + extra + STORED_EMPTY.length);
  tail.set(data.subarray(start, bytes));
  tail.fill(0, bytes - start, bytes - start + extra);
  tail[0]! &= ~(1 << (block.headerBit & 7));
  if (used > 0) tail[bytes - start - 1]! &= (1 << used) - 1; // padding bits must be zero: they begin the stored block
  tail.set(STORED_EMPTY, bytes - start + extra);
  return [data.subarray(0, start), tail];
}

/** `data` rewritten to end byte-aligned and non-final (a new buffer; `data` is left alone). */
export function joinable(data: Uint8Array): Buffer {
  return Buffer.concat(joinPieces(data, findFinalBlock(data)));
}
