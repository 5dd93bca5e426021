/**
 * A reader for GVariant's serialised form (the format ostree stores its commit, dirtree, dirmeta and file-header
 * objects in), after glib's `gvariant-serialiser.c` and the GVariant specification: alignment, fixed sizes,
 * framing offsets (little-endian, 1/2/4/8 bytes by container size) at the end of arrays and tuples. Only what
 * ostree's object types need: basic types, `s`, `ay`, arrays, tuples, dict entries and variants; no maybes.
 *
 * Integers come back as serialised (little-endian). ostree writes its own integers big-endian inside them
 * (`GUINT32_TO_BE`, ostree `src/libostree/ostree-core.h`), so `objects.ts` reads those fields as raw bytes.
 */

export type GType =
  | { kind: 'basic'; code: string; size: number; align: number }
  | { kind: 'string'; code: 's' | 'o' | 'g' }
  | { kind: 'variant' }
  | { kind: 'array'; element: GType }
  | { kind: 'tuple'; members: GType[] };

const BASIC: Record<string, number> = { y: 1, b: 1, n: 2, q: 2, i: 4, u: 4, h: 4, x: 8, t: 8, d: 8 };

/** Parse one complete type string, e.g. `(a{sv}aya(say)sstayay)`. */
export function parseType(signature: string): GType {
  const [type, end] = parseAt(signature, 0);
  if (end !== signature.length) throw new Error(`GVariant type '${signature}': trailing characters`);
  return type;
}

function parseAt(sig: string, at: number): [GType, number] {
  const c = sig[at];
  if (c === undefined) throw new Error(`GVariant type '${sig}': unexpected end`);
  const size = BASIC[c];
  if (size !== undefined) return [{ kind: 'basic', code: c, size, align: size }, at + 1];
  if (c === 's' || c === 'o' || c === 'g') return [{ kind: 'string', code: c }, at + 1];
  if (c === 'v') return [{ kind: 'variant' }, at + 1];
  if (c === 'a') {
    const [element, end] = parseAt(sig, at + 1);
    return [{ kind: 'array', element }, end];
  }
  if (c === '(' || c === '{') {
    const close = c === '(' ? ')' : '}';
    const members: GType[] = [];
    let pos = at + 1;
    while (sig[pos] !== close) {
      const [member, end] = parseAt(sig, pos);
      members.push(member);
      pos = end;
    }
    if (c === '{' && members.length !== 2) throw new Error(`GVariant type '${sig}': a dict entry has two members`);
    return [{ kind: 'tuple', members }, pos + 1];
  }
  throw new Error(`GVariant type '${sig}': unsupported type character '${c}'`);
}

export function alignOf(type: GType): number {
  switch (type.kind) {
    case 'basic':
      return type.align;
    case 'string':
      return 1;
    case 'variant':
      return 8;
    case 'array':
      return alignOf(type.element);
    case 'tuple':
      return Math.max(1, ...type.members.map(alignOf));
  }
}

/** The serialised size of a fixed-size type, or null for variable-size ones. */
export function fixedSizeOf(type: GType): number | null {
  switch (type.kind) {
    case 'basic':
      return type.size;
    case 'string':
    case 'variant':
    case 'array':
      return null;
    case 'tuple': {
      if (type.members.length === 0) return 1; // the unit type
      let size = 0;
      for (const member of type.members) {
        const fixed = fixedSizeOf(member);
        if (fixed === null) return null;
        size = alignUp(size, alignOf(member)) + fixed;
      }
      return alignUp(size, alignOf(type));
    }
  }
}

const alignUp = (n: number, align: number) => Math.ceil(n / align) * align;

function offsetSize(containerSize: number): number {
  if (containerSize === 0) return 0;
  if (containerSize <= 0xff) return 1;
  if (containerSize <= 0xffff) return 2;
  return containerSize <= 0xffffffff ? 4 : 8;
}

function readOffset(data: Buffer, at: number, size: number): number {
  switch (size) {
    case 1:
      return data[at]!;
    case 2:
      return data.readUInt16LE(at);
    case 4:
      return data.readUInt32LE(at);
    default:
      return Number(data.readBigUInt64LE(at));
  }
}

function corrupt(what: string): Error {
  return new Error(`corrupt GVariant: ${what}`);
}

/** The byte ranges of a tuple's members (each a subarray of `data`, sharing its memory). */
export function tupleMembers(type: GType, data: Buffer): Buffer[] {
  if (type.kind !== 'tuple') throw new Error('tupleMembers needs a tuple type');
  const osize = offsetSize(data.byteLength);
  let frameEnd = data.byteLength; // framing offsets are read from the end, backwards
  let pos = 0;
  const out: Buffer[] = [];
  type.members.forEach((member, index) => {
    pos = alignUp(pos, alignOf(member));
    const fixed = fixedSizeOf(member);
    let end: number;
    if (fixed !== null) end = pos + fixed;
    else if (index === type.members.length - 1) end = frameEnd;
    else {
      frameEnd -= osize;
      if (frameEnd < pos) throw corrupt('tuple framing offsets overlap its members');
      end = readOffset(data, frameEnd, osize);
    }
    if (end < pos || end > data.byteLength) throw corrupt('tuple member out of bounds');
    out.push(data.subarray(pos, end));
    pos = end;
  });
  if (pos > frameEnd) throw corrupt('tuple members run into the framing offsets');
  return out;
}

/** The byte ranges of an array's elements. */
export function arrayElements(type: GType, data: Buffer): Buffer[] {
  if (type.kind !== 'array') throw new Error('arrayElements needs an array type');
  const fixed = fixedSizeOf(type.element);
  const out: Buffer[] = [];
  if (fixed !== null) {
    if (data.byteLength % fixed !== 0) throw corrupt('fixed-size array length is not a multiple of its element');
    for (let at = 0; at < data.byteLength; at += fixed) out.push(data.subarray(at, at + fixed));
    return out;
  }
  if (data.byteLength === 0) return out;
  const osize = offsetSize(data.byteLength);
  const tableStart = readOffset(data, data.byteLength - osize, osize);
  if (tableStart > data.byteLength || (data.byteLength - tableStart) % osize !== 0) {
    throw corrupt('array framing offsets');
  }
  const count = (data.byteLength - tableStart) / osize;
  const align = alignOf(type.element);
  let pos = 0;
  for (let i = 0; i < count; i++) {
    const end = readOffset(data, tableStart + i * osize, osize);
    const start = alignUp(pos, align);
    if (end < start || end > tableStart) throw corrupt('array element out of bounds');
    out.push(data.subarray(start, end));
    pos = end;
  }
  return out;
}

export interface VariantValue {
  type: string;
  value: unknown;
}

/**
 * Decode `data` as `type` into plain values: numbers (bigint for 64-bit), booleans, strings, Buffers for `ay`,
 * arrays, tuples as arrays, dict entries as `[key, value]`, variants as `{type, value}`.
 */
export function decode(type: GType | string, data: Buffer): unknown {
  const t = typeof type === 'string' ? parseType(type) : type;
  switch (t.kind) {
    case 'basic':
      return decodeBasic(t.code, data);
    case 'string': {
      if (data.byteLength === 0 || data[data.byteLength - 1] !== 0) throw corrupt('string without its nul');
      return data.toString('utf8', 0, data.byteLength - 1);
    }
    case 'variant': {
      const nul = data.lastIndexOf(0);
      if (nul < 0) throw corrupt('variant without its type');
      const signature = data.toString('latin1', nul + 1);
      return { type: signature, value: decode(signature, data.subarray(0, nul)) } satisfies VariantValue;
    }
    case 'array':
      if (t.element.kind === 'basic' && t.element.code === 'y') return data;
      return arrayElements(t, data).map((element) => decode(t.element, element));
    case 'tuple':
      return tupleMembers(t, data).map((member, i) => decode(t.members[i]!, member));
  }
}

function decodeBasic(code: string, data: Buffer): unknown {
  switch (code) {
    case 'y':
      return data[0]!;
    case 'b':
      return data[0] !== 0;
    case 'n':
      return data.readInt16LE(0);
    case 'q':
      return data.readUInt16LE(0);
    case 'i':
    case 'h':
      return data.readInt32LE(0);
    case 'u':
      return data.readUInt32LE(0);
    case 'x':
      return data.readBigInt64LE(0);
    case 't':
      return data.readBigUInt64LE(0);
    default:
      return data.readDoubleLE(0);
  }
}

/** Decode an `a{sv}` dictionary (commit metadata) into a map of variants. */
export function decodeVardict(data: Buffer): Map<string, VariantValue> {
  const entries = decode('a{sv}', data) as Array<[string, VariantValue]>;
  return new Map(entries);
}
