/**
 * fetch() for an HTTPS registry whose certificate a CA of its own signed (the embedded registry with `tls`).
 * Node 20's global fetch takes no CA (only undici's Agent, not a dependency here), so this speaks node:https with
 * `ca`, and hands back a web `Response` the transport reads as it reads fetch's. Redirects are followed as fetch
 * follows them (a 303, or a 301/302 of a POST, becomes a GET without a body), up to 20.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';

/** Statuses whose Response has no body (the fetch spec's null body statuses). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

export function caFetch(caPem: string) {
  const once = (url: URL, init: RequestInit): Promise<Response> =>
    new Promise((resolve, reject) => {
      const headers = new Headers(init.headers);
      const body = init.body as Buffer | Uint8Array | string | null | undefined;
      // As fetch does for a body of known length (no chunked encoding).
      if (body != null && !headers.has('content-length'))
        headers.set('content-length', String(Buffer.byteLength(body)));
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(
        url,
        {
          method: init.method ?? 'GET',
          headers: Object.fromEntries(headers),
          ...(url.protocol === 'https:' ? { ca: caPem } : {}),
          ...(init.signal ? { signal: init.signal } : {}),
        },
        (res) => {
          const out = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value === undefined) continue;
            for (const one of Array.isArray(value) ? value : [value]) out.append(name, one);
          }
          const status = res.statusCode ?? 500;
          const empty = NULL_BODY.has(status) || init.method === 'HEAD';
          if (empty) res.resume();
          resolve(
            new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
              status,
              statusText: res.statusMessage ?? '',
              headers: out,
            }),
          );
        },
      );
      // fetch rejects with a TypeError whose cause is the socket's error; transport/errors.ts reads `cause`.
      req.on('error', (error) =>
        reject(init.signal?.aborted ? error : new TypeError('fetch failed', { cause: error })),
      );
      req.end(body ?? undefined);
    });

  return async function fetchWithCa(input: string | URL, init: RequestInit = {}): Promise<Response> {
    let url = new URL(input);
    let current = init;
    for (let hop = 0; ; hop++) {
      const response = await once(url, current);
      const location = response.headers.get('location');
      if (current.redirect === 'manual' || !location || ![301, 302, 303, 307, 308].includes(response.status))
        return response;
      if (hop >= 20) throw new TypeError('fetch failed', { cause: new Error('too many redirects') });
      await response.body?.cancel();
      url = new URL(location, url);
      const method = current.method ?? 'GET';
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST'))
        current = { ...current, method: method === 'HEAD' ? 'HEAD' : 'GET', body: null };
    }
  };
}
