/**
 * The spec-neutral pieces every fragment is made of (files, units, users) and the few shared by several fragment
 * files. A leaf: it imports nothing of ours, so fragments.ts, mcd-fragment.ts, mirror-fragment.ts and the drivers
 * (src/drivers/) can all use it without an import circle.
 */
export interface FileNode {
  path: string;
  contents: string;
  mode: number;
}

export interface UnitNode {
  name: string;
  enabled?: boolean;
  contents?: string;
  dropins?: Array<{ name: string; contents: string }>;
}

export interface UserNode {
  name: string;
  sshAuthorizedKeys: string[];
}

export interface Fragment {
  files: FileNode[];
  units: UnitNode[];
  users: UserNode[];
}

export function emptyFragment(): Fragment {
  return { files: [], units: [], users: [] };
}

/** `ADD:x` / `DELETE:x` (or `ADD x`) → `{op, arg}`. */
export interface KernelArg {
  op: 'ADD' | 'DELETE';
  arg: string;
}

export const CONSOLE_DROPIN = {
  name: '10-devpivot-console.conf',
  contents:
    "# devpivot: copy this unit's output to the console so the host can follow the pivot\n" +
    '[Service]\nStandardOutput=journal+console\nStandardError=journal+console\n',
};

/** The staged deployment is written at shutdown: its log says whether that worked. */
export const FINALIZE_STAGED_UNIT: UnitNode = { name: 'ostree-finalize-staged.service', dropins: [CONSOLE_DROPIN] };
