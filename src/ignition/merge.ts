/**
 * In-process config merging, so `--ignition extra.ign` lands in the one config devpivot hands the guest.
 *
 * Spec 3 (operator notes, "Config Merging"): the child's fields override the parent's; lists of objects are
 * deduplicated by their key field (files/directories/links by `path` — across the three lists —, units and
 * drop-ins and users by `name`, disks and filesystems by `device`, …) and matching entries are merged; the few
 * argument lists (mkfs/mdadm options, file `append`) are appended. Spec 2 `append` semantics are simpler: lists
 * are concatenated, scalars overridden.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** How list entries are identified, by dotted path (array indices dropped). `=` = the value itself. */
const LIST_KEYS: Record<string, string> = {
  'ignition.config.merge': 'source',
  'ignition.security.tls.certificateAuthorities': 'source',
  'ignition.proxy.noProxy': '=',
  'kernelArguments.shouldExist': '=',
  'kernelArguments.shouldNotExist': '=',
  'storage.disks': 'device',
  'storage.disks.partitions': 'partition',
  'storage.raid': 'name',
  'storage.raid.devices': '=',
  'storage.filesystems': 'device',
  'storage.luks': 'name',
  'storage.luks.clevis.tang': 'url',
  'storage.files': 'path',
  'storage.directories': 'path',
  'storage.links': 'path',
  'systemd.units': 'name',
  'systemd.units.dropins': 'name',
  'passwd.users': 'name',
  'passwd.users.sshAuthorizedKeys': '=',
  'passwd.users.groups': '=',
  'passwd.groups': 'name',
};

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function keyOf(entry: Json, key: string): string | null {
  if (key === '=') return JSON.stringify(entry);
  if (!isObject(entry)) return null;
  // A partition is identified by its number, or by its label when the number is 0 or absent.
  if (key === 'partition') {
    const number = entry.number;
    return typeof number === 'number' && number !== 0 ? `#${number}` : `label:${String(entry.label ?? '')}`;
  }
  const value = entry[key];
  return value === undefined || value === null ? null : String(value);
}

function mergeList(parent: Json[], child: Json[], path: string): Json[] {
  const key = LIST_KEYS[path];
  if (path.endsWith('httpHeaders')) return mergeHeaders(parent, child);
  if (!key) return [...parent, ...child]; // argument lists and file `append`: appended
  const result = [...parent];
  for (const entry of child) {
    const id = keyOf(entry, key);
    const index = id === null ? -1 : result.findIndex((candidate) => keyOf(candidate, key) === id);
    if (index < 0) result.push(entry);
    else result[index] = mergeValue(result[index]!, entry, path);
  }
  return result;
}

/** A child header without a value removes the parent's header of that name. */
function mergeHeaders(parent: Json[], child: Json[]): Json[] {
  const result = [...parent];
  for (const header of child) {
    if (!isObject(header)) continue;
    const index = result.findIndex((h) => isObject(h) && h.name === header.name);
    const remove = header.value === undefined || header.value === null;
    if (index >= 0) result.splice(index, 1, ...(remove ? [] : [header]));
    else if (!remove) result.push(header);
  }
  return result;
}

function mergeValue(parent: Json | undefined, child: Json | undefined, path: string): Json {
  if (child === undefined || child === null) return parent ?? null;
  if (parent === undefined || parent === null) return child;
  if (Array.isArray(parent) && Array.isArray(child)) return mergeList(parent, child, path);
  if (isObject(parent) && isObject(child)) {
    const result: JsonObject = { ...parent };
    if (path === 'storage') removeShadowedNodes(result, child);
    for (const [name, value] of Object.entries(child)) {
      result[name] = mergeValue(result[name], value, path ? `${path}.${name}` : name);
    }
    return result;
  }
  return child;
}

/** Files, directories and links share one namespace: a child's entry replaces the parent's of another kind. */
function removeShadowedNodes(parentStorage: JsonObject, childStorage: JsonObject): void {
  const kinds = ['files', 'directories', 'links'];
  for (const kind of kinds) {
    const childPaths = new Set(
      (Array.isArray(childStorage[kind]) ? (childStorage[kind] as Json[]) : []).map((e) => keyOf(e, 'path')),
    );
    for (const other of kinds) {
      if (other === kind || !Array.isArray(parentStorage[other])) continue;
      parentStorage[other] = (parentStorage[other] as Json[]).filter((e) => !childPaths.has(keyOf(e, 'path')));
    }
  }
}

/** Spec 3 merge: `child` over `parent`. Neither input is modified. */
export function mergeSpec3(parent: object, child: object): JsonObject {
  return mergeValue(structuredClone(parent) as Json, structuredClone(child) as Json, '') as JsonObject;
}

/** Spec 2 `append` semantics: objects merged recursively, lists concatenated, child scalars win. */
export function appendSpec2(parent: object, child: object): JsonObject {
  const append = (a: Json | undefined, b: Json | undefined): Json => {
    if (b === undefined || b === null) return a ?? null;
    if (a === undefined || a === null) return b;
    if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
    if (isObject(a) && isObject(b)) {
      const result: JsonObject = { ...a };
      for (const [name, value] of Object.entries(b)) result[name] = append(a[name], value);
      return result;
    }
    return b;
  };
  return append(structuredClone(parent) as Json, structuredClone(child) as Json) as JsonObject;
}
