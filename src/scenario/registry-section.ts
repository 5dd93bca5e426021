/** `registry:`: `embedded` (the default: devpivot's own, on loopback) or an external registry's URL. */
import { isScalar, type Node } from 'yaml';
import type { DocumentReader } from './reader.js';
import type { RegistrySpec } from './types.js';

export function readRegistry(r: DocumentReader, node: Node | null): RegistrySpec {
  if (isScalar(node)) {
    const text = r.string(node, 'registry');
    if (text === 'embedded') return { kind: 'embedded' };
    if (/^https?:\/\//.test(text)) return { kind: 'external', url: text.replace(/\/+$/, '') };
    r.fail(node, `registry must be 'embedded' or an http(s) URL; got '${text}'`);
  }
  const f = r.fields(node, 'registry', ['url'], ['url']);
  const url = r.string(f.get('url')!.value, 'registry.url');
  if (!/^https?:\/\//.test(url)) r.fail(f.get('url')!.value, 'registry.url must start with http:// or https://');
  return { kind: 'external', url: url.replace(/\/+$/, '') };
}
