/**
 * Which component (package) each content object of a commit belongs to, as rpm-ostree maps them before ostree-ext
 * chunks an image (coreos/rpm-ostree d5ef5f0c `rust/src/container.rs`: `MappingBuilder::create_meta` and the
 * initramfs case of `container_encapsulate`; sizes as ostree-ext's `ObjectMetaSized::compute_sizes`):
 *
 * - a file's package comes from the package database (here: the fixture's `components` list, "NAME VERSION PATH"
 *   lines from its recipe's dpkg queries; the last line for a path wins, as the last copy is the file in the
 *   tree); its identifier is NAME-VERSION, its name NAME;
 * - `usr/lib/modules/KV/initramfs.img` is the component "initramfs (kernel KV)", named `initramfs`;
 * - every other file is `rpmostree-unpackaged-content`;
 * - an object reached by several paths takes the component of its last path in path order;
 * - packages change with frequency 0 (the fixture keeps no changelog, which rpm-ostree counts), the initramfs and
 *   unpackaged content with the maximum (they change with every build);
 * - a component's size is the sum of its objects' sizes; components are ordered by size, largest first, ties by
 *   identifier.
 */
import { readFile } from 'node:fs/promises';
import { DevpivotError } from '../../core/errors.js';
import type { ContentEntry } from './layer-plan.js';
import { S_IFMT, S_IFREG } from './objects.js';
import { type Component, MAX_FREQUENCY } from './packing.js';

export const UNPACKAGED = 'rpmostree-unpackaged-content';

export interface Owner {
  name: string;
  version: string;
}

/** Paths (relative, as in the commit) → package, from "NAME VERSION PATH" lines. */
export async function readComponents(path: string): Promise<Map<string, Owner>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new DevpivotError('CHUNKING_NO_COMPONENTS', `cannot read the package list ${path}`, {
      hint: 'rebuild the fixture: devpivot images build --force',
      cause: error,
    });
  }
  const owners = new Map<string, Owner>();
  for (const line of text.split('\n')) {
    const match = /^(\S+) (\S+) (.+)$/.exec(line);
    if (match) owners.set(match[3]!.replace(/^\/+/, ''), { name: match[1]!, version: match[2]! });
  }
  return owners;
}

/** Path order of a Rust `Utf8PathBuf`: component by component. */
function comparePaths(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

export interface ComponentMapping {
  /** Ordered by size (largest first), then identifier. */
  components: Component[];
  /** Content objects by component identifier, in checksum order. */
  objects: Map<string, ContentEntry[]>;
}

export function mapComponents(content: ContentEntry[], owners: Map<string, Owner>): ComponentMapping {
  const meta = new Map<string, Component>();
  const objects = new Map<string, ContentEntry[]>();
  const componentOf = (path: string): Component => {
    const initramfs = /^usr\/lib\/modules\/([^/]+)\/initramfs\.img$/.exec(path);
    const owner = owners.get(path);
    const [identifier, name, changeFrequency] = initramfs
      ? [`initramfs (kernel ${initramfs[1]})`, 'initramfs', MAX_FREQUENCY]
      : owner
        ? [`${owner.name}-${owner.version}`, owner.name, 0]
        : [UNPACKAGED, UNPACKAGED, MAX_FREQUENCY];
    let component = meta.get(identifier);
    if (!component) {
      component = { identifier, name, changeFrequency, size: 0 };
      meta.set(identifier, component);
    }
    return component;
  };
  for (const entry of content) {
    const last = [...entry.paths].sort(comparePaths).at(-1)!;
    const component = componentOf(last);
    const { header } = entry;
    if ((header.mode & S_IFMT) === S_IFREG) component.size += header.size;
    const list = objects.get(component.identifier);
    if (list) list.push(entry);
    else objects.set(component.identifier, [entry]);
  }
  const components = [...meta.values()]
    .filter((c) => objects.has(c.identifier))
    .sort((a, b) => b.size - a.size || (a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : 0));
  return { components, objects };
}
