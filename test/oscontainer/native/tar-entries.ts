/** Test helper: every entry of a gzip layer as an independent reader (tar-stream's extract) sees it. */
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';

export interface Entry {
  name: string;
  type: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  linkname: string | null;
  /** PAX record keys (values are decoded as text by tar-stream, so they are not compared here). */
  paxKeys: string[];
  /** Content of regular files up to 64 KiB. */
  data: Buffer | null;
}

export async function tarEntries(layerPath: string): Promise<Entry[]> {
  const extract = tar.extract();
  createReadStream(layerPath).pipe(createGunzip()).pipe(extract);
  const entries: Entry[] = [];
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    const { header } = entry;
    const data = Buffer.concat(chunks);
    entries.push({
      name: header.name,
      type: header.type ?? 'file',
      mode: header.mode ?? 0,
      uid: header.uid ?? 0,
      gid: header.gid ?? 0,
      size: header.size ?? 0,
      linkname: header.linkname ?? null,
      paxKeys: Object.keys(header.pax ?? {}).filter((key) => key !== 'path' && key !== 'linkpath'),
      data: header.type === 'file' && data.byteLength <= 64 * 1024 ? data : null,
    });
  }
  return entries;
}
