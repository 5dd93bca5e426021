/**
 * Upload a blob in chunks: POST to open a session, one PATCH per chunk (Content-Range), PUT with the digest to
 * close it (distribution spec "Pushing a blob in chunks"). The registry verifies the digest.
 */
import { DevpivotError } from '../../core/errors.js';
import { pushScope, type RegistryTransport } from '../transport/transport.js';

/** Bytes per PATCH unless the client is told otherwise. */
export const DEFAULT_CHUNK_SIZE = 8 * 1024 * 1024;

function location(transport: RegistryTransport, response: Response, repository: string): string {
  const value = response.headers.get('location');
  if (!value)
    throw new DevpivotError('REGISTRY_ERROR', `${transport.registry}/${repository}: upload response without Location`);
  return transport.resolve(value);
}

/** `source` yields the blob's bytes; `onProgress` gets the bytes sent after each chunk. */
export async function uploadBlob(
  transport: RegistryTransport,
  repository: string,
  digest: string,
  source: AsyncIterable<Uint8Array>,
  options: { chunkSize?: number; onProgress?: (sent: number) => void } = {},
): Promise<void> {
  const scopes = [pushScope(repository)];
  const opened = await transport.request('POST', `/v2/${repository}/blobs/uploads/`, repository, {
    scopes,
    headers: { 'content-length': '0' },
  });
  await opened.body?.cancel();
  let next = location(transport, opened, repository);
  let sent = 0;
  for await (const chunk of rechunk(source, options.chunkSize ?? DEFAULT_CHUNK_SIZE)) {
    const response = await transport.request('PATCH', next, repository, {
      scopes,
      headers: {
        'content-type': 'application/octet-stream',
        'content-range': `${sent}-${sent + chunk.byteLength - 1}`,
        'content-length': String(chunk.byteLength),
      },
      body: chunk,
    });
    await response.body?.cancel();
    next = location(transport, response, repository);
    sent += chunk.byteLength;
    options.onProgress?.(sent);
  }
  const url = new URL(next);
  url.searchParams.set('digest', digest);
  const closed = await transport.request('PUT', url.toString(), repository, {
    scopes,
    headers: { 'content-length': '0' },
  });
  await closed.body?.cancel();
}

/** Re-cut a byte stream into pieces of exactly `size` bytes (the last may be shorter, never empty). */
export async function* rechunk(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let length = 0;
  for await (const piece of source) {
    parts.push(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength));
    length += piece.byteLength;
    while (length >= size) {
      const all = Buffer.concat(parts, length);
      yield all.subarray(0, size);
      parts = [all.subarray(size)];
      length -= size;
    }
  }
  if (length > 0) yield Buffer.concat(parts, length);
}
