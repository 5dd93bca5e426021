import { RegistryError } from '../errors.js';
import type { RequestContext } from './context.js';

/** The spec's "lexical order (case-insensitive alphanumeric)" for tags and the catalog, stable for equal names. */
export function compareLexical(a: string, b: string): number {
  const la = a.toLowerCase();
  const lb = b.toLowerCase();
  if (la !== lb) return la < lb ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `n` and `last` pagination shared by tags/list and _catalog, with an RFC 5988 `Link` to the next page. */
export function paginate(
  ctx: RequestContext,
  items: string[],
  path: string,
): { page: string[]; headers: Record<string, string> } {
  const sorted = [...items].sort(compareLexical);
  const last = ctx.query.get('last');
  const rawN = ctx.query.get('n');
  let start = 0;
  if (last !== null) {
    start = sorted.findIndex((item) => compareLexical(item, last) > 0);
    if (start < 0) start = sorted.length;
  }
  if (rawN === null) return { page: sorted.slice(start), headers: {} };
  if (!/^\d+$/.test(rawN)) throw new RegistryError(400, 'UNSUPPORTED', `invalid page size n='${rawN}'`);
  const n = Number(rawN);
  const page = sorted.slice(start, start + n);
  const headers: Record<string, string> = {};
  if (n > 0 && start + n < sorted.length) {
    const next = new URLSearchParams({ n: String(n), last: page[page.length - 1]! });
    headers.Link = `<${path}?${next}>; rel="next"`;
  }
  return { page, headers };
}
