/**
 * A node's `health-check:` (greenboot, ignition/health-check.ts): `true`, or `{ attempts: N, script: FILE }` —
 * the boots GRUB gives a new deployment before it falls back (1 to 9: the fixture's GRUB counts that far; greenboot's
 * default 3) and a required check of the user's (a `.sh` file: greenboot runs only those). Paths start at the
 * scenario file's directory.
 */
import { basename } from 'node:path';
import { isScalar, type Node } from 'yaml';
import type { DocumentReader } from './reader.js';
import type { NodeHealthCheck } from './types.js';

export const DEFAULT_ATTEMPTS = 3;

export function readHealthCheck(r: DocumentReader, node: Node | null, what: string): NodeHealthCheck {
  if (isScalar(node) && typeof node.value === 'boolean') {
    if (!node.value) r.fail(node, `${what}: write 'true' or { attempts, script }, or leave health-check out`);
    return { attempts: DEFAULT_ATTEMPTS };
  }
  const f = r.fields(node, what, ['attempts', 'script']);
  const attempts = f.has('attempts') ? r.integer(f.get('attempts')!.value, `${what}.attempts`, 1, 9) : DEFAULT_ATTEMPTS;
  if (!f.has('script')) return { attempts };
  const value = f.get('script')!.value;
  const script = r.path(r.string(value, `${what}.script`));
  const kind = r.env.pathKind(script);
  if (kind !== 'file')
    r.fail(
      value,
      `${what}.script: ${script} ${kind === 'missing' ? 'does not exist' : 'is not a file'}`,
      'a shell script greenboot runs as a required check; relative paths start at the scenario file',
    );
  if (!basename(script).endsWith('.sh'))
    r.fail(
      value,
      `${what}.script: ${basename(script)} does not end in .sh`,
      'greenboot runs only *.sh checks: rename it',
    );
  return { attempts, script };
}
