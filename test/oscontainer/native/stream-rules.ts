/**
 * Test helper: the order rules ostree-ext's importer enforces while it reads a layer as a stream
 * (bootc-dev/bootc `crates/ostree-ext/src/tar/import.rs` at 534c76ea). Returns the importer's error for the first
 * entry it would refuse, or null when the whole stream imports. Only the order and naming rules are modelled; the
 * object contents are checked elsewhere (format.test.ts, import.test.ts with the real ostree CLI).
 *
 * - `filter_entry` (l. 199): directories are skipped; only paths under `sysroot/ostree/repo/` are read, and of
 *   those neither `config` nor `refs/…` (the hard links into the tree are "non-object file hardlinks": ignored).
 * - `import_commit` (l. 628): the first entry left is a regular file and a `.commit` object; another entry must
 *   follow it ("End of stream after commit object"): its `.commitmeta`, or any object (a `.commitmeta` anywhere
 *   later is not a metadata type `import_metadata` accepts).
 * - `import_object` (l. 402): a second `.commit` is "Found multiple commit objects"; in object-set mode (the
 *   layers after the first of a chunked image, `import_objects`) a metadata object is refused and a content object
 *   seen twice is "Duplicate object".
 * - `process_file_xattrs_link` (l. 463) queues the xattrs for the next `.file`; a second one before that file is
 *   "Found previous dangling xattrs"; `import_content_object` (l. 355) needs the queue to hold exactly its own
 *   checksum ("Missing xattrs reference", "Object mismatch"); content objects are regular files or symlinks.
 * - `parse_object_entry_path` / `parse_checksum` (l. 121, 142): `objects/XX/<62 hex>.<kind>`.
 */
export interface StreamEntry {
  name: string;
  type: string;
}

const REPO_PREFIX = 'sysroot/ostree/repo/';
const METADATA = new Set(['commit', 'commitmeta', 'dirtree', 'dirmeta']);

interface ObjectName {
  checksum: string;
  kind: string;
}

/** `objects/ab/<62 hex>.kind` (or `.file.xattrs`, v0) → checksum and kind; a malformed name is the importer's error. */
function parseObject(path: string): ObjectName | string {
  const match = /^objects\/([^/]*)\/([^/]+)$/.exec(path);
  if (!match) return `Invalid path (no parent) ${path}`;
  const [, parent, name] = match as unknown as [string, string, string];
  if (parent.length !== 2) return `Invalid checksum parent ${parent}`;
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return `Invalid objpath ${path}`;
  const kind = name.slice(dot + 1);
  const rest = name.slice(0, dot).replace(/(\.file)+$/, '');
  if (rest.length !== 62) return `Invalid checksum part ${rest}`;
  const checksum = parent + rest;
  if (!/^[0-9a-f]{64}$/.test(checksum)) return `Invalid checksum ${checksum}`;
  return { checksum, kind };
}

/** The entries the importer reads: `filter_entry`. */
function objectEntries(entries: StreamEntry[]): Array<StreamEntry & { path: string }> {
  return entries.flatMap((entry) => {
    if (entry.type === 'directory' || !entry.name.startsWith(REPO_PREFIX)) return [];
    const path = entry.name.slice(REPO_PREFIX.length);
    const base = path.split('/').pop();
    if (base === 'config' || path === 'refs' || path.startsWith('refs/')) return [];
    return [{ ...entry, path }];
  });
}

export type ImportMode = 'commit' | 'object-set';

export function importerError(entries: StreamEntry[], mode: ImportMode): string | null {
  const objects = objectEntries(entries);
  let index = 0;
  if (mode === 'commit') {
    const first = objects[0];
    if (!first) return 'Commit object not found';
    if (first.type !== 'file') return `Expected regular file for commit object, not ${first.type}`;
    const commit = parseObject(first.path);
    if (typeof commit === 'string') return commit;
    if (commit.kind !== 'commit') return `Expected commit object, not ${commit.kind}`;
    const next = objects[1];
    if (!next) return 'End of stream after commit object';
    const meta = parseObject(next.path);
    if (typeof meta === 'string') return meta;
    // The entry after the commit is its detached metadata when there is one, else imported as any object.
    index = meta.kind === 'commitmeta' ? 2 : 1;
  }
  let pending: string | null = null;
  const seen = new Set<string>();
  for (const entry of objects.slice(index)) {
    if (entry.path.startsWith('xattrs/')) continue; // v0 split xattrs content: cached, no order rule
    if (!entry.path.startsWith('objects/')) continue;
    const object = parseObject(entry.path);
    if (typeof object === 'string') return object;
    switch (object.kind) {
      case 'commit':
        return 'Found multiple commit objects';
      case 'file-xattrs-link':
      case 'xattrs':
        if (pending) return `Found previous dangling xattrs for file object '${pending}'`;
        if (entry.type !== 'file' && entry.type !== 'link') return `Unexpected xattrs type '${entry.type}'`;
        pending = object.checksum;
        break;
      case 'file-xattrs':
        break;
      case 'file': {
        if (!pending) return 'Missing xattrs reference';
        if (pending !== object.checksum) return `Object mismatch, found xattrs for ${pending}`;
        pending = null;
        if (entry.type !== 'file' && entry.type !== 'symlink') return `Invalid tar entry of type ${entry.type}`;
        if (mode === 'object-set' && seen.has(object.checksum)) return `Duplicate object: ${object.checksum}`;
        seen.add(object.checksum);
        break;
      }
      default:
        if (!METADATA.has(object.kind)) return `Invalid object type ${object.kind}`;
        if (object.kind === 'commitmeta') return 'Invalid metadata object type; CommitMeta';
        if (mode === 'object-set') return `Found metadata object ${object.checksum}.${object.kind} in object set mode`;
        if (entry.type !== 'file') return `Invalid non-regular metadata object ${entry.path}`;
    }
  }
  return null;
}
