/**
 * `registry:`: `embedded` (the default: devpivot's own, on loopback), an external registry's URL (`URL` or
 * `{ url }`), or the embedded registry in mirror mode, `{ mirror: [PREFIX, ...], upstream?: URL }`
 * (docs/PROTOCOLS.md "Mirror mode"). The embedded one takes `tls: true` (HTTPS with a CA of devpivot's, carried to
 * the guests) and `auth: true` (credentials required, the nodes given a pull secret): docs/PROTOCOLS.md "Trust".
 */
import { isMap, isScalar, isSeq, type Node } from 'yaml';
import { readUrl } from './images-section.js';
import { type MirrorPrefix, pathWithin, readMirrorPrefix } from './mirror-prefix.js';
import type { DocumentReader } from './reader.js';
import type { RegistrySpec } from './types.js';

export function readRegistry(r: DocumentReader, node: Node | null): RegistrySpec {
  if (isScalar(node)) {
    if (r.string(node, 'registry') === 'embedded') return { kind: 'embedded' };
    if (!/^[a-z][a-z0-9+.-]*:/i.test(String(node.value)))
      r.fail(node, `registry must be 'embedded' or an http(s) URL; got '${String(node.value)}'`);
    return { kind: 'external', url: readBaseUrl(r, node, 'registry') };
  }
  const fields = r.fields(node, 'registry', ['url', 'mirror', 'upstream', 'tls', 'auth']);
  const url = fields.get('url');
  const mirror = fields.get('mirror');
  const upstream = fields.get('upstream');
  const trust = readTrust(r, fields);
  const trustKey = fields.get('tls') ?? fields.get('auth');
  if (url && trustKey)
    r.fail(
      trustKey.key,
      `registry: '${String((trustKey.key as { value?: unknown }).value)}' is for the embedded registry`,
      'an external registry brings its own TLS and credentials: leave it out',
    );
  if (url && (mirror || upstream))
    r.fail(
      (mirror ?? upstream)!.key,
      `registry: '${mirror ? 'mirror' : 'upstream'}' cannot go with 'url'`,
      'mirror mode uses the embedded registry: leave out url',
    );
  if (url) return { kind: 'external', url: readBaseUrl(r, url.value, 'registry.url') };
  if (!mirror) {
    if (upstream) r.fail(upstream.key, "registry.upstream needs 'mirror'", 'name the prefixes the upstream serves');
    if (trustKey) return { kind: 'embedded', ...trust };
    r.fail(node, "registry needs 'url', 'mirror', 'tls' or 'auth'");
  }
  const prefixes = readPrefixes(r, mirror.value);
  const base = upstream ? r.guard(() => readBaseUrl(r, upstream.value, 'registry.upstream')) : undefined;
  return { kind: 'embedded', mirror: { prefixes, ...(base ? { upstream: base } : {}) }, ...trust };
}

function readTrust(r: DocumentReader, fields: ReturnType<DocumentReader['fields']>): { tls?: true; auth?: true } {
  const tls = fields.get('tls');
  const auth = fields.get('auth');
  return {
    ...(tls && r.boolean(tls.value, 'registry.tls') ? { tls: true as const } : {}),
    ...(auth && r.boolean(auth.value, 'registry.auth') ? { auth: true as const } : {}),
  };
}

/** A registry base URL: scheme, host and port only (image references name a registry by host[:port]). */
function readBaseUrl(r: DocumentReader, node: Node | null, what: string): string {
  const text = readUrl(r, node, what);
  const url = new URL(text);
  if (url.pathname.replace(/\/+$/, '') !== '' || url.search || url.hash)
    r.fail(node, `${what} '${text}' has a path or query`, 'just the scheme, host and port, like http://127.0.0.1:5000');
  if (url.username || url.password)
    r.fail(node, `${what} '${text}' holds credentials`, 'log in with skopeo login (auth.json) instead');
  return text.replace(/\/+$/, '');
}

function readPrefixes(r: DocumentReader, node: Node | null): MirrorPrefix[] {
  if (!isSeq(node) || isMap(node)) r.fail(node, 'registry.mirror must be a list of prefixes like quay.io/namespace');
  const items = node.items as Node[];
  if (items.length === 0) r.fail(node, 'registry.mirror is empty', 'name at least one prefix, or drop mirror');
  const out: MirrorPrefix[] = [];
  items.forEach((item, i) => {
    const prefix = r.guard(() => readMirrorPrefix(r, item, `registry.mirror[${i}]`));
    if (!prefix) return;
    const clash = out.find((other) => pathWithin(prefix.path, other.path) || pathWithin(other.path, prefix.path));
    if (clash)
      r.guard(() =>
        r.fail(
          item,
          `registry.mirror[${i}] '${prefix.prefix}' overlaps '${clash.prefix}'`,
          'the embedded registry holds each prefix under its path: paths must not contain one another',
        ),
      );
    else out.push(prefix);
  });
  return out;
}
