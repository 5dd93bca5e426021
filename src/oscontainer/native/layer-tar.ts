/**
 * Stream the ostree layer planned by `layer-plan.ts` as tar bytes. Content objects are read from the archive
 * repo and decompressed ahead of the packer (on libuv's thread pool), so I/O and inflate overlap compression.
 *
 * Objects of a middling size come with the deflate stream the repo already holds (`Deflated`), which the
 * parallel gzip joins into the layer instead of compressing the content again (with `reuseDeflate`, the
 * default): this is most of the build's CPU time. Small objects go with the surrounding headers (a join costs a
 * flush and a worker round trip); very large ones are streamed and compressed, so memory stays bounded.
 * Plain bytes come in ~1 MiB pieces: thousands of 512-byte headers would otherwise cost one async step each.
 */
import type { Deflated, GzipInput } from '../parallel-gzip.js';
import type { ArchiveRepo } from './archive-repo.js';
import { type LayerPlan, objectHeader, treeHeader, xattrsLinkHeader } from './layer-plan.js';
import { S_IFMT, S_IFREG } from './objects.js';
import { END_OF_ARCHIVE, encodeHeader, paddingFor } from './tar-writer.js';

/** Objects from this size up are joined as deflated (with `reuseDeflate`)... */
const JOIN_MIN = 64 * 1024;
/** ...and up to this one read whole; larger ones are streamed (`wholeMax`). */
const WHOLE_MAX = 64 * 1024 * 1024;
/** Objects read ahead of the packer, and the content bytes they may hold at most. */
const READ_AHEAD = 32;
const READ_AHEAD_BYTES = 128 * 1024 * 1024;
const PIECE = 1024 * 1024;

export interface StreamOptions {
  /** Join the repo's own deflate streams instead of compressing those objects again (default true). */
  reuseDeflate?: boolean;
  /** Objects larger than this are streamed and compressed again (default 64 MiB). */
  wholeMax?: number;
}

export async function* streamLayer(
  repo: ArchiveRepo,
  plan: LayerPlan,
  options: StreamOptions = {},
): AsyncGenerator<GzipInput> {
  const reuse = options.reuseDeflate ?? true;
  const wholeMax = options.wholeMax ?? WHOLE_MAX;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const push = (buffer: Buffer) => {
    if (buffer.byteLength === 0) return;
    pending.push(buffer);
    pendingBytes += buffer.byteLength;
  };
  const take = () => {
    const piece = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    return piece;
  };

  for (const entry of plan.structure) {
    push(encodeHeader(entry.header));
    if (entry.data) {
      push(entry.data);
      push(paddingFor(entry.data.byteLength));
    }
    if (pendingBytes >= PIECE) yield take();
  }

  const { content } = plan;
  const sizeOf = (i: number) => {
    const { header } = content[i]!;
    return (header.mode & S_IFMT) === S_IFREG ? header.size : -1;
  };
  const reads = new Map<number, Promise<{ raw: Buffer; deflated: Buffer }>>();
  let next = 0;
  let aheadBytes = 0;
  try {
    for (let i = 0; i < content.length; i++) {
      for (; next < content.length && next < i + READ_AHEAD; next++) {
        const size = sizeOf(next);
        if (size < 0 || size > wholeMax) continue;
        if (aheadBytes + size > READ_AHEAD_BYTES && reads.size > 0) break;
        aheadBytes += size;
        const read = repo.readContentDeflated(content[next]!.checksum, content[next]!.header);
        read.catch(() => {}); // awaited in order below
        reads.set(next, read);
      }
      const entry = content[i]!;
      push(encodeHeader(xattrsLinkHeader(entry)));
      push(entry.header.xattrs);
      push(paddingFor(entry.header.xattrs.byteLength));
      const header = objectHeader(entry);
      push(encodeHeader(header));
      if (header.type === 'file') {
        const whole = reads.get(i);
        reads.delete(i);
        if (whole) {
          const object = await whole;
          aheadBytes -= object.raw.byteLength;
          if (reuse && object.raw.byteLength >= JOIN_MIN) {
            if (pendingBytes > 0) yield take();
            yield object satisfies Deflated;
          } else push(object.raw);
        } else {
          if (pendingBytes > 0) yield take();
          for await (const chunk of repo.streamContent(entry.checksum, entry.header)) yield chunk;
        }
        push(paddingFor(entry.header.size));
      }
      for (const path of entry.paths) push(encodeHeader(treeHeader(entry, path)));
      if (pendingBytes >= PIECE) yield take();
    }
  } finally {
    await Promise.allSettled(reads.values());
  }
  push(END_OF_ARCHIVE);
  yield take();
}
