import { DevpivotError } from '../../core/errors.js';
import { BASE_VOLUME_PATTERN, DEVPIVOT_XMLNS, parseMetadataElement, startedAttribute } from '../domain-xml.js';
import { ownsDomain } from '../owner.js';
import { type Connection, DOMAIN_STATE_NAMES, DomainState, UndefineFlag } from './connection.js';
import { POOL_NAME } from './pool.js';
import type { StoragePool } from './storage.js';

/** A domain that carries devpivot's metadata element: only these are ever listed or removed. */
export interface DevpivotDomain {
  name: string;
  session: string;
  node: string;
  image: string;
  base: string;
  created: string;
  /** ISO time the domain last started (live metadata), when running. */
  started: string | undefined;
  state: string;
  active: boolean;
  volumes: string[];
  /** `127.0.0.1:PORT` forwarded to the guest's port 22, when devpivot set one up (`devpivot ssh`). */
  ssh: string | undefined;
  /** Whether the calling user defined it (vm/owner.ts): always so on their own session daemon. */
  own: boolean;
}

export async function listDevpivotDomains(conn: Connection): Promise<DevpivotDomain[]> {
  const result: DevpivotDomain[] = [];
  for (const domain of await conn.domains()) {
    try {
      const xml = await domain.metadata(DEVPIVOT_XMLNS).catch(() => undefined);
      const meta = xml ? parseMetadataElement(xml) : undefined;
      if (!meta) continue;
      const { state } = await domain.state().catch(() => ({ state: DomainState.noState }));
      const started = xml ? startedAttribute(xml) : undefined;
      const active = state !== DomainState.shutoff && state !== DomainState.noState;
      result.push({
        name: domain.name,
        session: meta.session,
        node: meta.node,
        image: meta.image,
        base: meta.base,
        created: meta.created,
        started: active ? started : undefined,
        state: DOMAIN_STATE_NAMES[state] ?? `state ${state}`,
        active,
        volumes: meta.volumes,
        ssh: meta.ssh,
        own: ownsDomain(meta.owner, conn.uri),
      });
    } finally {
      domain.free();
    }
  }
  return result.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Refuse a session id another user's domain holds on this daemon (qemu:///system is shared): their volumes carry the
 * same names (`devpivot-<session>--<node>…`), so using it would replace or delete their objects.
 */
export async function assertSessionFree(conn: Connection, session: string): Promise<void> {
  const holder = (await listDevpivotDomains(conn)).find((d) => d.session === session && !d.own);
  if (holder)
    throw new DevpivotError(
      'VM_SESSION_TAKEN',
      `session id '${session}' is another user's on ${conn.uri} (${holder.name})`,
    );
}

export interface DevpivotVolume {
  name: string;
  /** The owning session, or undefined for a shared base image. */
  session: string | undefined;
}

/** Volumes in the devpivot pool named by devpivot: `devpivot-<session>--…` and `devpivot-base-<hash>.qcow2`. */
export async function listDevpivotVolumes(conn: Connection): Promise<DevpivotVolume[]> {
  const pool = await conn.lookupPool(POOL_NAME);
  if (!pool) return [];
  try {
    if (!(await pool.isActive())) return [];
    await pool.refresh().catch(() => {});
    const result: DevpivotVolume[] = [];
    for (const volume of await pool.volumes()) {
      const name = volume.name;
      volume.free();
      if (BASE_VOLUME_PATTERN.test(name)) result.push({ name, session: undefined });
      else {
        const match = /^devpivot-([a-z0-9-]+?)--./.exec(name);
        if (match) result.push({ name, session: match[1] });
      }
    }
    return result.sort((a, b) => a.name.localeCompare(b.name));
  } finally {
    pool.free();
  }
}

export interface CleanupFilter {
  /** Only this session's objects; ignored when `all`. */
  session?: string;
  all?: boolean;
  /** Also delete cached base image volumes that no remaining domain uses. */
  images?: boolean;
  /**
   * The caller's own sessions (recorded in their state directory). Other users' domains are never touched; a
   * session's volumes are deleted only when it is one of these or of the caller's own domains.
   */
  ownSessions?: Iterable<string>;
}

export interface CleanupReport {
  domains: string[];
  volumes: string[];
  errors: string[];
}

/**
 * Destroy and undefine devpivot's domains, then delete its volumes, for one session or all. Only objects with
 * devpivot's metadata (domains) or devpivot's name pattern inside the devpivot pool (volumes) are touched. Never
 * throws: failures are collected in `errors`.
 */
export async function cleanup(conn: Connection, filter: CleanupFilter): Promise<CleanupReport> {
  const report: CleanupReport = { domains: [], volumes: [], errors: [] };
  const wanted = (session: string | undefined) => (filter.all ? session !== undefined : session === filter.session);
  let domains: DevpivotDomain[] = [];
  try {
    domains = await listDevpivotDomains(conn);
  } catch (error) {
    report.errors.push(`listing domains: ${(error as Error).message}`);
  }
  const own = new Set([...(filter.ownSessions ?? []), ...domains.filter((d) => d.own).map((d) => d.session)]);
  // Ownership decides, never the session id alone: a session id another user's domain holds (two users may both
  // choose `ci-42`) is theirs, whatever the caller's own records say, and so is every volume their domains use.
  const foreign = new Set(domains.filter((d) => !d.own).map((d) => d.session));
  const foreignVolumes = new Set(domains.filter((d) => !d.own).flatMap((d) => d.volumes));
  // A volume whose session has no domain left is the daemon's natural user's (as a domain without an owner is).
  const orphansMine = ownsDomain(undefined, conn.uri);
  const mine = (session: string | undefined) =>
    session !== undefined && !foreign.has(session) && (own.has(session) || orphansMine);
  const volumesOfRemoved = new Set<string>();
  for (const info of domains.filter((d) => d.own && wanted(d.session))) {
    try {
      const domain = await conn.lookupDomain(info.name);
      if (!domain) continue;
      try {
        if (await domain.isActive())
          await domain.destroy().catch(async (error) => {
            if (await domain.isActive()) throw error;
          });
        await domain.undefine(UndefineFlag.nvram | UndefineFlag.managedSave | UndefineFlag.snapshotsMetadata);
        report.domains.push(info.name);
        for (const volume of info.volumes) volumesOfRemoved.add(volume);
      } finally {
        domain.free();
      }
    } catch (error) {
      report.errors.push(`domain ${info.name}: ${(error as Error).message}`);
    }
  }
  let volumes: string[] = [];
  try {
    const listed = await listDevpivotVolumes(conn);
    volumes = listed
      .filter(
        (v) =>
          !foreignVolumes.has(v.name) &&
          ((wanted(v.session) && mine(v.session)) || (v.session !== undefined && volumesOfRemoved.has(v.name))),
      )
      .map((v) => v.name);
    if (filter.images && filter.all) {
      const inUse = new Set(domains.filter((d) => !report.domains.includes(d.name)).map((d) => d.base));
      volumes.push(...listed.filter((v) => v.session === undefined && !inUse.has(v.name)).map((v) => v.name));
    }
  } catch (error) {
    report.errors.push(`listing volumes: ${(error as Error).message}`);
  }
  if (volumes.length === 0) return report;
  const pool = await conn.lookupPool(POOL_NAME).catch(() => undefined);
  if (!pool) return report;
  try {
    for (const name of volumes) {
      try {
        const volume = await pool.lookupVolume(name);
        if (!volume) continue;
        try {
          await volume.delete();
          report.volumes.push(name);
        } finally {
          volume.free();
        }
      } catch (error) {
        report.errors.push(`volume ${name}: ${(error as Error).message}`);
      }
    }
  } finally {
    pool.free();
  }
  return report;
}

/**
 * A domain named `name` left by an earlier run of this session is ours (by metadata): remove it and the session's
 * `volumes` in `pool`. A domain of that name another session or user defined is never touched (VM_NAME_TAKEN).
 */
export async function removeLeftovers(
  conn: Connection,
  domain: { name: string; session: string; uri: string },
  pool: StoragePool,
  volumes: string[],
): Promise<void> {
  const { name, session, uri } = domain;
  const existing = await conn.lookupDomain(name);
  if (existing) {
    try {
      const meta = parseMetadataElement((await existing.metadata(DEVPIVOT_XMLNS)) ?? '');
      // Ownership decides: a domain of this name another user defined is never destroyed (vm/owner.ts).
      if (meta?.session !== session || !ownsDomain(meta.owner, uri))
        throw new DevpivotError('VM_NAME_TAKEN', `a domain named ${name} exists and is not this session's`, {
          hint: `choose another session id, or remove it: virsh -c ${uri} undefine ${name}`,
        });
      if (await existing.isActive()) await existing.destroy();
      await existing.undefine(UndefineFlag.nvram | UndefineFlag.managedSave);
    } finally {
      existing.free();
    }
  }
  await pool.refresh().catch(() => {});
  for (const volume of volumes) {
    const v = await pool.lookupVolume(volume);
    if (!v) continue;
    await v.delete().finally(() => v.free());
  }
}
