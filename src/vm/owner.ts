/**
 * Whose a devpivot domain is. A session daemon (qemu:///session) is the user's own; the system daemon is shared by
 * root and the libvirt group, so `ps`, `down` and `console` act only on the domains the caller defined (the
 * `owner` uid devpivot records in each domain's metadata, domain-xml.ts). Domains defined before devpivot recorded
 * an owner belong to the daemon's natural user: the session's user, or root on any other URI.
 */

/** The uid that owns a domain with metadata owner `owner` (undefined: recorded before owners were) on `uri`. */
export function domainOwner(owner: number | undefined, uri: string, uid: number): number {
  if (owner !== undefined) return owner;
  return /^[a-z0-9+]+:\/\/[^/]*\/session\b/.test(uri) ? uid : 0;
}

/** Whether the caller (`uid`) owns a domain with metadata owner `owner` on `uri`. */
export function ownsDomain(owner: number | undefined, uri: string, uid: number = process.getuid?.() ?? 0): boolean {
  return domainOwner(owner, uri, uid) === uid;
}
