/** `images:`: the disks nodes boot, by name (`fixture:N`, a local qcow2, or a URL with its sha256). */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import type { DocumentReader } from './reader.js';
import type { ImageSource } from './types.js';

export function readImages(r: DocumentReader, node: Node | null, out: Map<string, ImageSource>): void {
  const map = r.map(node, 'images');
  for (const pair of map.items) {
    r.guard(() => {
      const name = r.name(pair.key as Node, 'image name');
      r.broken.add(name);
      out.set(name, readImage(r, pair.value as Node | null, `image '${name}'`));
      r.broken.delete(name);
    });
  }
}

function readImage(r: DocumentReader, node: Node | null, what: string): ImageSource {
  if (isScalar(node)) {
    const text = r.string(node, what);
    const fixture = /^fixture:(\S+)$/.exec(text);
    if (fixture) return { kind: 'fixture', version: fixture[1]! };
    if (/^https?:/.test(text)) r.fail(node, `${what}: a URL needs a checksum`, 'write { url: ..., sha256: ... }');
    return { kind: 'path', path: r.path(text) };
  }
  const f = r.fields(node, what, ['fixture', 'path', 'url', 'sha256']);
  const sha = f.has('sha256') ? readSha256(r, f.get('sha256')!.value, `${what}.sha256`) : undefined;
  if (f.has('fixture')) return { kind: 'fixture', version: r.string(f.get('fixture')!.value, `${what}.fixture`) };
  if (f.has('url')) {
    if (!sha) r.fail(node, `${what}: a URL needs 'sha256'`);
    return { kind: 'url', url: r.string(f.get('url')!.value, `${what}.url`), sha256: sha };
  }
  if (f.has('path'))
    return {
      kind: 'path',
      path: r.path(r.string(f.get('path')!.value, `${what}.path`)),
      ...(sha ? { sha256: sha } : {}),
    };
  r.fail(node, `${what} needs one of 'fixture', 'path' or 'url'`);
}

function readSha256(r: DocumentReader, node: Node | null, what: string): string {
  const value = r.string(node, what).replace(/^sha256:/, '');
  if (!/^[0-9a-f]{64}$/.test(value)) r.fail(node, `${what} must be 64 lowercase hex digits`);
  return value;
}
