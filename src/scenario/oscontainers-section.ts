/** `oscontainers:`: the images nodes pivot to, by name (built from the fixture, an ostree commit or a rootfs; or pulled). */
import { isScalar, type Node } from 'yaml';
import type { DocumentReader } from './reader.js';
import type { OscontainerSource } from './types.js';

export function readOscontainers(r: DocumentReader, node: Node | null, out: Map<string, OscontainerSource>): void {
  const map = r.map(node, 'oscontainers');
  for (const pair of map.items) {
    r.guard(() => {
      const name = r.name(pair.key as Node, 'oscontainer name');
      r.broken.add(name);
      out.set(name, readOscontainer(r, pair.value as Node | null, `oscontainer '${name}'`));
      r.broken.delete(name);
    });
  }
}

function readOscontainer(r: DocumentReader, node: Node | null, what: string): OscontainerSource {
  if (isScalar(node)) return readBuildSource(r, node, what);
  const f = r.fields(node, what, ['build', 'pull']);
  if (f.has('build') === f.has('pull')) r.fail(node, `${what} needs exactly one of 'build' or 'pull'`);
  if (f.has('pull')) {
    const ref = r.string(f.get('pull')!.value, `${what}.pull`);
    if (!/^[^\s@]+(:[^\s@/]+)?(@sha256:[0-9a-f]{64})?$/.test(ref))
      r.fail(f.get('pull')!.value, `${what}.pull must be an image reference like host/repo:tag or @sha256:...`);
    return { kind: 'pull', ref };
  }
  return readBuildSource(r, f.get('build')!.value, `${what}.build`);
}

function readBuildSource(r: DocumentReader, node: Node | null, what: string): OscontainerSource {
  if (isScalar(node)) {
    const text = r.string(node, what);
    const fixture = /^fixture:(\S+)$/.exec(text);
    if (!fixture) r.fail(node, `${what} must be fixture:N or { repo, commit } or { rootfs }; got '${text}'`);
    return { kind: 'build-fixture', version: fixture[1]! };
  }
  const f = r.fields(node, what, ['fixture', 'repo', 'commit', 'rootfs', 'version']);
  if (f.has('fixture')) return { kind: 'build-fixture', version: r.string(f.get('fixture')!.value, what) };
  if (f.has('rootfs')) {
    const version = f.has('version') ? r.string(f.get('version')!.value, `${what}.version`) : undefined;
    return {
      kind: 'build-rootfs',
      rootfs: r.path(r.string(f.get('rootfs')!.value, `${what}.rootfs`)),
      ...(version ? { version } : {}),
    };
  }
  if (f.has('repo')) {
    if (!f.has('commit')) r.fail(node, `${what} needs 'commit' with 'repo'`);
    const commit = r.string(f.get('commit')!.value, `${what}.commit`);
    if (!/^[0-9a-f]{64}$/.test(commit))
      r.fail(f.get('commit')!.value, `${what}.commit must be a 64-hex ostree checksum`);
    return { kind: 'build-ostree', repo: r.path(r.string(f.get('repo')!.value, `${what}.repo`)), commit };
  }
  r.fail(node, `${what} needs 'fixture', 'repo' + 'commit', or 'rootfs'`);
}
