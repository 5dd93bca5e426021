/** `images:`: the disks nodes boot, by name (`fixture:N`, a local qcow2, or a URL with its sha256). */
import type { Node } from 'yaml';
import { isScalar } from 'yaml';
import type { DocumentReader } from './reader.js';
import type { ImageSource } from './types.js';

const QCOW2_MAGIC = Buffer.from([0x51, 0x46, 0x49, 0xfb]);

export function readImages(r: DocumentReader, node: Node | null, out: Map<string, ImageSource>): void {
  const map = r.map(node, 'images');
  for (const pair of map.items) {
    r.guard(() => {
      // References to an image whose definition is broken are not reported again (also for a bad name).
      if (isScalar(pair.key)) r.broken.add(String(pair.key.value));
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
    if (fixture) return { kind: 'fixture', version: r.fixtureVersion(node, fixture[1]!) };
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text))
      r.fail(node, `${what}: a URL needs a checksum`, 'write { url: ..., sha256: ... }');
    return { kind: 'path', path: qcow2Path(r, node, text, what) };
  }
  const f = r.fields(node, what, ['fixture', 'path', 'url', 'sha256']);
  const forms = ['fixture', 'path', 'url'].filter((key) => f.has(key));
  if (forms.length > 1) r.fail(node, `${what} has ${forms.join(' and ')}: it needs exactly one of them`);
  const sha = f.has('sha256') ? r.guard(() => readSha256(r, f.get('sha256')!.value, `${what}.sha256`)) : undefined;
  if (f.has('fixture')) {
    const value = f.get('fixture')!.value;
    const version = r.string(value, `${what}.fixture`).replace(/^fixture:/, '');
    if (f.has('sha256')) r.fail(f.get('sha256')!.key, `${what}: 'sha256' applies to 'path' and 'url' only`);
    return { kind: 'fixture', version: r.fixtureVersion(value, version) };
  }
  if (f.has('url')) {
    const url = readUrl(r, f.get('url')!.value, `${what}.url`);
    if (!f.has('sha256')) r.fail(node, `${what}: a URL needs 'sha256'`, 'the download is checked against it');
    // An invalid sha256 was reported above; the scenario is invalid either way.
    return { kind: 'url', url, sha256: sha ?? '' };
  }
  if (f.has('path')) {
    const value = f.get('path')!.value;
    const path = qcow2Path(r, value, r.string(value, `${what}.path`), what);
    return { kind: 'path', path, ...(sha ? { sha256: sha } : {}) };
  }
  r.fail(node, `${what} needs one of 'fixture', 'path' or 'url'`);
}

/** A local disk: resolved against the scenario's directory, and a readable qcow2 file now. */
function qcow2Path(r: DocumentReader, node: Node | null, text: string, what: string): string {
  const path = r.path(text);
  const kind = r.env.pathKind(path);
  if (kind === 'missing')
    r.fail(node, `${what}: ${path} does not exist`, 'relative paths start at the directory of the scenario file');
  if (kind !== 'file') r.fail(node, `${what}: ${path} is ${describeKind(kind)}`, 'a qcow2 disk image file');
  const head = r.env.readHead(path, 4);
  if (!head) r.fail(node, `${what}: ${path} cannot be read`, 'make it readable by the user running devpivot');
  if (!head.equals(QCOW2_MAGIC))
    r.fail(node, `${what}: ${path} is not a qcow2 image`, `convert it: qemu-img convert -O qcow2 ${text} disk.qcow2`);
  return path;
}

export function describeKind(kind: string): string {
  return kind === 'directory' ? 'a directory' : kind === 'unreadable' ? 'not readable' : 'not a regular file';
}

/** An http(s) URL by the WHATWG grammar, with a host. */
export function readUrl(r: DocumentReader, node: Node | null, what: string): string {
  const text = r.string(node, what);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    r.fail(node, `${what} '${text}' is not a URL`, 'like https://example.test/disk.qcow2');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    r.fail(node, `${what} '${text}' is not an http(s) URL`, 'devpivot downloads over http:// or https:// only');
  if (url.hostname === '') r.fail(node, `${what} '${text}' has no host`);
  return text;
}

function readSha256(r: DocumentReader, node: Node | null, what: string): string {
  const value = r.string(node, what).replace(/^sha256:/, '');
  if (!/^[0-9a-f]{64}$/.test(value)) r.fail(node, `${what} must be 64 lowercase hex digits`);
  return value;
}
