/** `registry:`: `embedded` (the default: devpivot's own, on loopback) or an external registry's URL. */
import { isScalar, type Node } from 'yaml';
import { readUrl } from './images-section.js';
import type { DocumentReader } from './reader.js';
import type { RegistrySpec } from './types.js';

export function readRegistry(r: DocumentReader, node: Node | null): RegistrySpec {
  let value = node;
  if (isScalar(node)) {
    if (r.string(node, 'registry') === 'embedded') return { kind: 'embedded' };
  } else value = r.fields(node, 'registry', ['url'], ['url']).get('url')!.value;
  const what = isScalar(node) ? 'registry' : 'registry.url';
  if (isScalar(node) && !/^[a-z][a-z0-9+.-]*:/i.test(String(node.value)))
    r.fail(node, `registry must be 'embedded' or an http(s) URL; got '${String(node.value)}'`);
  const text = readUrl(r, value, what);
  const url = new URL(text);
  // Image references name a registry by host[:port] only: a path, query or credentials would be lost.
  if (url.pathname.replace(/\/+$/, '') !== '' || url.search || url.hash)
    r.fail(
      value,
      `${what} '${text}' has a path or query`,
      'just the scheme, host and port, like http://127.0.0.1:5000',
    );
  if (url.username || url.password)
    r.fail(value, `${what} '${text}' holds credentials`, 'log in with skopeo login (auth.json) instead');
  return { kind: 'external', url: text.replace(/\/+$/, '') };
}
