/** A `WWW-Authenticate` challenge: the scheme (lowercase) and its auth-params. */
export interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/** Parse `Bearer realm="…",service="…",scope="…"` (RFC 7235 auth-param syntax). */
export function parseChallenge(header: string): Challenge {
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const params: Record<string, string> = {};
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))/g;
  for (const match of (space < 0 ? '' : header.slice(space + 1)).matchAll(re)) {
    params[match[1]!.toLowerCase()] = (match[2] ?? match[3] ?? '').replace(/\\(.)/g, '$1');
  }
  return { scheme, params };
}
