/**
 * A node's `kernel-args: { add, delete }`: what the legacy driver writes to /etc/pivot/kernel-args, one `ADD arg`
 * or `DELETE arg` per line. An argument is one word of printable text: a space or a line break inside one would
 * become a second argument or a second line of that file.
 */
import { isScalar, isSeq, type Node } from 'yaml';
import { parseKernelArg } from '../ignition/fragments.js';
import type { DocumentReader } from './reader.js';

export interface KernelArgs {
  add: string[];
  delete: string[];
}

export function readKernelArgs(r: DocumentReader, value: Node | null, what: string): KernelArgs {
  const f = r.fields(value, what, ['add', 'delete']);
  const out: KernelArgs = { add: [], delete: [] };
  for (const op of ['add', 'delete'] as const) {
    const list = f.get(op)?.value;
    if (list === undefined) continue;
    const items: (Node | null)[] = isScalar(list) ? [list] : isSeq(list) ? (list.items as Node[]) : [];
    if (!isScalar(list) && !isSeq(list)) r.fail(list, `${what}.${op} must be a list of kernel arguments`);
    items.forEach((item, i) => {
      r.guard(() => out[op].push(readArg(r, item, `${what}.${op}[${i}]`, op)));
    });
  }
  for (const arg of out.add.filter((a) => out.delete.includes(a)))
    r.guard(() =>
      r.fail(
        f.get('delete')!.value,
        `${what}: '${arg}' is both added and deleted`,
        'the legacy driver applies DELETE after ADD',
      ),
    );
  return out;
}

function readArg(r: DocumentReader, item: Node | null, what: string, op: 'add' | 'delete'): string {
  const arg = r.string(item, what);
  if (arg === '') r.fail(item, `${what} is empty`, 'a kernel argument like console=ttyS0');
  if (/\s/.test(arg))
    r.fail(item, `${what} '${arg}' holds white space`, 'one argument per list item, e.g. [console=ttyS0, quiet]');
  try {
    parseKernelArg(`${op.toUpperCase()}:${arg}`);
  } catch (error) {
    r.fail(item, `${what}: ${(error as Error).message}`);
  }
  return arg;
}
