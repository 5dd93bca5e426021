/** Small blob operations: read one whole (verified), ask whether a repository has one, mount one across. */
import { DevpivotError } from '../../core/errors.js';
import { digestOf } from '../../oci/digest.js';
import { pullScope, pushScope, type RegistryTransport } from '../transport/transport.js';

/** A small blob (an image config) in memory, verified. */
export async function getBlob(transport: RegistryTransport, repository: string, digest: string): Promise<Buffer> {
  const response = await transport.request('GET', `/v2/${repository}/blobs/${digest}`, repository, {
    scopes: [pullScope(repository)],
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (digestOf(bytes) !== digest) {
    throw new DevpivotError('DIGEST_MISMATCH', `blob ${digest} from ${transport.registry}/${repository} is corrupt`, {
      hint: 'the registry served different content than its manifest names',
    });
  }
  return bytes;
}

/** The blob's size, or null when the repository does not have it. */
export async function hasBlob(
  transport: RegistryTransport,
  repository: string,
  digest: string,
): Promise<number | null> {
  const response = await transport.request('HEAD', `/v2/${repository}/blobs/${digest}`, repository, {
    scopes: [pushScope(repository)],
    ok: [404],
  });
  await response.body?.cancel();
  return response.status === 404 ? null : Number(response.headers.get('content-length') ?? 0);
}

/** Cross-repository mount; returns false when the registry opened an upload instead (then cancelled). */
export async function mountBlob(
  transport: RegistryTransport,
  repository: string,
  digest: string,
  from: string,
): Promise<boolean> {
  const path = `/v2/${repository}/blobs/uploads/?mount=${encodeURIComponent(digest)}&from=${encodeURIComponent(from)}`;
  const response = await transport.request('POST', path, repository, {
    scopes: [pushScope(repository), pullScope(from)],
    headers: { 'content-length': '0' },
  });
  await response.body?.cancel();
  if (response.status === 201) return true;
  const location = response.headers.get('location');
  if (location) {
    await transport
      .request('DELETE', transport.resolve(location), repository, { scopes: [pushScope(repository)], ok: [404, 405] })
      .then(
        (r) => r.body?.cancel(),
        () => {},
      );
  }
  return false;
}
