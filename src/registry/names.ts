/** The spec's "lexical order (case-insensitive alphanumeric)" for tags and the catalog, stable for equal names. */
export function compareLexical(a: string, b: string): number {
  const la = a.toLowerCase();
  const lb = b.toLowerCase();
  if (la !== lb) return la < lb ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
