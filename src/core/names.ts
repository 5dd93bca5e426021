/**
 * The one rule for the names devpivot puts into libvirt object names (`devpivot-<session>-<node>`): session ids
 * and node names. The VM layer enforces it on create; scenario validation applies the same rule before anything
 * runs, so a name the scenario accepts is one libvirt will take.
 */
const ID = /^[a-z0-9](?:[a-z0-9]|-(?!-))*$/;

/** Lower-case letters, digits and single dashes; no leading, trailing or double dash; at most 40 characters. */
export function validName(value: string): boolean {
  return value.length > 0 && value.length <= MAX_ID_LENGTH && ID.test(value) && !value.endsWith('-');
}

export const MAX_ID_LENGTH = 40;
