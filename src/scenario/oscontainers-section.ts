/** `oscontainers:`: the images nodes pivot to, by name (built from the fixture, an ostree commit or a rootfs; or pulled). */
import { join } from 'node:path';
import { isScalar, isSeq, type Node } from 'yaml';
import { LAYER_COMPRESSIONS } from '../oci/format.js';
import { parsePlatform } from '../oci/platform.js';
import { parseReference } from '../oci/reference.js';
import { DERIVED_FIELDS, readDerived } from './derived-section.js';
import { describeKind } from './images-section.js';
import { coveringPrefix } from './mirror-prefix.js';
import { referenceProblem } from './pullspec.js';
import type { DocumentReader } from './reader.js';
import type { LayerCompression, OscontainerFormat, OscontainerSource, RegistrySpec } from './types.js';

const FORMATS: readonly OscontainerFormat[] = ['legacy', 'native'];

/** `registry` is the scenario's registry section, or undefined when it is broken (then no check depends on it). */
export function readOscontainers(
  r: DocumentReader,
  node: Node | null,
  out: Map<string, OscontainerSource>,
  registry: RegistrySpec | undefined,
): void {
  const map = r.map(node, 'oscontainers');
  for (const pair of map.items) {
    r.guard(() => {
      if (isScalar(pair.key)) r.broken.add(String(pair.key.value));
      const name = r.name(pair.key as Node, 'oscontainer name');
      r.broken.add(name);
      out.set(name, readOscontainer(r, pair.value as Node | null, `oscontainer '${name}'`, registry, out));
      r.broken.delete(name);
    });
  }
}

function readOscontainer(
  r: DocumentReader,
  node: Node | null,
  what: string,
  registry: RegistrySpec | undefined,
  defined: Map<string, OscontainerSource>,
): OscontainerSource {
  if (isScalar(node)) return readBuildSource(r, node, what);
  const f = r.fields(node, what, ['build', 'pull', 'prefetch', 'platforms', ...DERIVED_FIELDS]);
  const forms = ['build', 'pull', 'containerfile'].filter((key) => f.has(key));
  if (forms.length !== 1) r.fail(node, `${what} needs exactly one of 'build', 'pull' or 'containerfile'`);
  for (const key of ['from', 'context'])
    if (f.has(key) && !f.has('containerfile'))
      r.fail(f.get(key)!.key, `${what}: '${key}' applies to 'containerfile' only`);
  if (f.has('containerfile')) return readDerived(r, f, what, defined);
  if (f.has('prefetch') && !f.has('pull')) r.fail(f.get('prefetch')!.key, `${what}: 'prefetch' applies to 'pull' only`);
  if (f.has('platforms') && !f.has('pull'))
    r.fail(f.get('platforms')!.key, `${what}: 'platforms' applies to 'pull' only`);
  if (f.has('pull')) {
    const value = f.get('pull')!.value;
    const ref = r.string(value, `${what}.pull`);
    const problem = referenceProblem(ref);
    if (problem) r.fail(value, `${what}.pull: ${problem.message}`, problem.hint);
    const prefetch = f.has('prefetch') ? r.boolean(f.get('prefetch')!.value, `${what}.prefetch`) : true;
    const local = r.localSource(value, `${what}.pull`, ref);
    if (local && !prefetch)
      r.fail(f.get('prefetch')!.value, `${what}: 'prefetch: false' applies to registry images, not ${ref}`);
    if (!prefetch && registry) onDemandProblem(r, f.get('prefetch')!.value, what, ref, registry);
    const platforms = f.has('platforms') ? readPlatforms(r, f.get('platforms')!.value, `${what}.platforms`) : undefined;
    return {
      kind: 'pull',
      ref: local ?? ref,
      ...(prefetch ? {} : { prefetch: false as const }),
      ...(platforms ? { platforms } : {}),
    };
  }
  return readBuildSource(r, f.get('build')!.value, `${what}.build`);
}

/** `platforms: [linux/amd64, …]`: which images of an index to copy (os/architecture[/variant], at least one). */
function readPlatforms(r: DocumentReader, node: Node | null, what: string): string[] {
  if (!isSeq(node) || node.items.length === 0)
    r.fail(node, `${what} must be a list of platforms`, 'like [linux/amd64] or [linux/amd64, linux/arm64/v8]');
  return node.items.map((item) => {
    const text = r.string(item as Node, what);
    if (!parsePlatform(text))
      r.fail(item as Node, `${what}: '${text}' is not a platform`, 'write os/architecture[/variant], like linux/amd64');
    return text;
  });
}

/**
 * `prefetch: false` leaves the image at the upstream until a node asks the embedded registry for it, which then
 * pulls it through: that needs mirror mode with an upstream, and the reference under one of the mirrored prefixes.
 */
function onDemandProblem(r: DocumentReader, at: Node | null, what: string, ref: string, registry: RegistrySpec): void {
  const mirror = registry.kind === 'embedded' ? registry.mirror : undefined;
  if (!mirror?.upstream)
    r.fail(
      at,
      `${what}: 'prefetch: false' needs registry.mirror and registry.upstream: the nodes pull the image through the embedded registry from the upstream`,
      "add registry: { mirror: [PREFIX], upstream: URL }, or drop 'prefetch: false' to copy the image ahead",
    );
  const parsed = parseReference(ref);
  if (!coveringPrefix(mirror.prefixes, `${parsed.registry}/${parsed.repository}`))
    r.fail(
      at,
      `${what}: 'prefetch: false' but ${ref} is not under a registry.mirror prefix (${mirror.prefixes.map((p) => p.prefix).join(', ')})`,
      "only mirrored names reach the embedded registry's pull-through cache: mirror its namespace, or drop 'prefetch: false'",
    );
}

function readBuildSource(r: DocumentReader, node: Node | null, what: string): OscontainerSource {
  if (isScalar(node)) {
    const text = r.string(node, what);
    const fixture = /^fixture:(\S+)$/.exec(text);
    if (!fixture)
      r.fail(
        node,
        `${what} must be fixture:N or { repo, commit } or { rootfs } (each with an optional format); got '${text}'`,
      );
    return { kind: 'build-fixture', version: r.fixtureVersion(node, fixture[1]!) };
  }
  const f = r.fields(node, what, [
    'fixture',
    'repo',
    'commit',
    'rootfs',
    'version',
    'format',
    'compression',
    'kernel',
    'layers',
  ]);
  // Not guarded: with an unknown format the oscontainer is broken, so no driver check runs against a guess.
  const format = f.has('format') ? r.oneOf(f.get('format')!.value, `${what}.format`, FORMATS) : undefined;
  const compression = f.has('compression') ? readCompression(r, f, what, format) : undefined;
  const formatted = <T extends OscontainerSource>(source: T): T => ({
    ...source,
    ...(format ? { format } : {}),
    ...(compression ? { compression } : {}),
  });
  const forms = ['fixture', 'repo', 'rootfs'].filter((key) => f.has(key));
  if (forms.length > 1) r.fail(node, `${what} has ${forms.join(' and ')}: it needs exactly one of them`);
  if (f.has('version') && !f.has('rootfs'))
    r.fail(f.get('version')!.key, `${what}: 'version' applies to 'rootfs' only`);
  if (f.has('commit') && !f.has('repo')) r.fail(f.get('commit')!.key, `${what}: 'commit' applies to 'repo' only`);
  if (f.has('kernel') && !f.has('fixture')) r.fail(f.get('kernel')!.key, `${what}: 'kernel' applies to 'fixture' only`);
  const unsigned = f.has('kernel') && r.oneOf(f.get('kernel')!.value, `${what}.kernel`, ['unsigned'] as const);
  const layers = f.has('layers') ? readLayers(r, f, what, format) : undefined;
  if (f.has('fixture')) {
    const value = f.get('fixture')!.value;
    const version = r.fixtureVersion(value, r.string(value, what).replace(/^fixture:/, ''));
    return formatted({
      kind: 'build-fixture',
      version,
      ...(unsigned ? { unsignedKernel: true as const } : {}),
      ...(layers !== undefined ? { layers } : {}),
    });
  }
  if (f.has('rootfs')) {
    const version = f.has('version') ? r.guard(() => r.string(f.get('version')!.value, `${what}.version`)) : undefined;
    const rootfs = existing(r, f.get('rootfs')!.value, `${what}.rootfs`, 'directory');
    return formatted({ kind: 'build-rootfs', rootfs, ...(version ? { version } : {}) });
  }
  if (f.has('repo')) {
    if (!f.has('commit')) r.fail(node, `${what} needs 'commit' with 'repo'`);
    const repoValue = f.get('repo')!.value;
    const repo = r.guard(() => {
      const dir = existing(r, repoValue, `${what}.repo`, 'directory');
      if (r.env.pathKind(join(dir, 'config')) !== 'file' || r.env.pathKind(join(dir, 'objects')) !== 'directory')
        r.fail(repoValue, `${what}.repo: ${dir} is not an ostree repository (no config and objects/)`);
      return dir;
    });
    const commitValue = f.get('commit')!.value;
    const commit = r.string(commitValue, `${what}.commit`);
    if (!/^[0-9a-f]{64}$/.test(commit)) r.fail(commitValue, `${what}.commit must be a 64-hex ostree checksum`);
    if (repo === undefined) return formatted({ kind: 'build-ostree', repo: '', commit });
    // Every ostree repo mode stores a commit as objects/<2 hex>/<62 hex>.commit.
    if (r.env.pathKind(join(repo, 'objects', commit.slice(0, 2), `${commit.slice(2)}.commit`)) !== 'file')
      r.fail(
        commitValue,
        `${what}.commit ${commit.slice(0, 12)}… is not in ${repo}`,
        `list them: ostree --repo=${repo} log REF`,
      );
    return formatted({ kind: 'build-ostree', repo, commit });
  }
  r.fail(node, `${what} needs 'fixture', 'repo' + 'commit', or 'rootfs'`);
}

/**
 * `compression: gzip | zstd`: a native image's layers (docs/PROTOCOLS.md "Layer compression"). The legacy format
 * is what openshift/pivot's podman pull reads, gzip, always.
 */
function readCompression(
  r: DocumentReader,
  f: ReturnType<DocumentReader['fields']>,
  what: string,
  format: OscontainerFormat | undefined,
): LayerCompression {
  const entry = f.get('compression')!;
  const compression = r.oneOf(entry.value, `${what}.compression`, LAYER_COMPRESSIONS);
  if (format !== 'native')
    r.fail(
      entry.key,
      `${what}: 'compression' needs format: native`,
      "a legacy oscontainer's layer is gzip, what openshift/pivot reads",
    );
  return compression;
}

/**
 * `layers: N`: a chunked native image of a fixture version (the fixture's build says which package each file comes
 * from; no other source does), N bins as ostree-ext's max layers: 4 to 128.
 */
function readLayers(
  r: DocumentReader,
  f: ReturnType<DocumentReader['fields']>,
  what: string,
  format: OscontainerFormat | undefined,
): number {
  const entry = f.get('layers')!;
  if (!f.has('fixture'))
    r.fail(
      entry.key,
      `${what}: 'layers' applies to 'fixture' only`,
      "chunking groups files by package: only the fixture's build says which package each file comes from",
    );
  if (format !== 'native')
    r.fail(entry.key, `${what}: 'layers' needs format: native`, 'a legacy oscontainer is one /srv/repo layer');
  if (f.has('kernel'))
    r.fail(entry.key, `${what}: 'layers' and 'kernel: unsigned' exclude each other`, 'drop one of them');
  return r.integer(entry.value, `${what}.layers`, 4, 128);
}

/** A path written in the scenario that must exist now as a file or directory; resolved against the file's dir. */
function existing(r: DocumentReader, node: Node | null, what: string, kind: 'file' | 'directory'): string {
  const path = r.path(r.string(node, what));
  const found = r.env.pathKind(path);
  if (found === 'missing')
    r.fail(node, `${what}: ${path} does not exist`, 'relative paths start at the directory of the scenario file');
  if (found !== kind)
    r.fail(node, `${what}: ${path} is ${found === 'file' ? 'a file' : describeKind(found)}`, `a ${kind}`);
  return path;
}
