/**
 * Stream the ostree layer planned by `layer-plan.ts` as tar bytes. Content objects are read from the archive
 * repo and decompressed ahead of the packer (small ones whole, on libuv's thread pool; large ones streamed), so
 * I/O and inflate overlap with compression. Output comes in ~1 MiB pieces: thousands of 512-byte headers would
 * otherwise cost one async step each downstream.
 */
import type { ArchiveRepo } from './archive-repo.js';
import { type LayerPlan, objectHeader, treeHeader, xattrsLinkHeader } from './layer-plan.js';
import { S_IFMT, S_IFREG } from './objects.js';
import { END_OF_ARCHIVE, encodeHeader, paddingFor } from './tar-writer.js';

/** Objects up to this size are read and inflated whole, ahead of time; larger ones are streamed. */
const SMALL_OBJECT = 1024 * 1024;
/** Objects read ahead of the packer. */
const READ_AHEAD = 32;
const PIECE = 1024 * 1024;

export async function* streamLayer(repo: ArchiveRepo, plan: LayerPlan): AsyncGenerator<Buffer> {
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
  const isSmallFile = (i: number) => {
    const { header } = content[i]!;
    return (header.mode & S_IFMT) === S_IFREG && header.size <= SMALL_OBJECT;
  };
  const reads = new Map<number, Promise<Buffer>>();
  let next = 0;
  try {
    for (let i = 0; i < content.length; i++) {
      for (; next < content.length && next < i + READ_AHEAD; next++) {
        if (!isSmallFile(next)) continue;
        const read = repo.readContent(content[next]!.checksum, content[next]!.header);
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
        const small = reads.get(i);
        reads.delete(i);
        if (small) push(await small);
        else {
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
