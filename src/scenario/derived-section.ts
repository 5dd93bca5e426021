/**
 * A derived oscontainer: `v3: { containerfile: FILE, from: v2, context: DIR }` — built by podman on the host from
 * the Containerfile with `--build-arg BASE=<v2, pinned by digest>` (oscontainer/derived.ts). `from` names an
 * oscontainer defined above it (prepare builds them in file order); `context` defaults to the Containerfile's
 * directory. Paths start at the scenario file's directory.
 */
import { dirname } from 'node:path';
import type { DocumentReader, MappingFields } from './reader.js';
import type { OscontainerSource } from './types.js';

export const DERIVED_FIELDS = ['containerfile', 'from', 'context'] as const;

export function readDerived(
  r: DocumentReader,
  f: MappingFields,
  what: string,
  defined: Map<string, OscontainerSource>,
): OscontainerSource {
  const fileNode = f.get('containerfile')!.value;
  const containerfile = r.path(r.string(fileNode, `${what}.containerfile`));
  const kind = r.env.pathKind(containerfile);
  if (kind !== 'file')
    r.fail(
      fileNode,
      `${what}.containerfile: ${containerfile} ${kind === 'missing' ? 'does not exist' : 'is not a file'}`,
      'a Containerfile that says ARG BASE and FROM $BASE; relative paths start at the scenario file',
    );
  if (!f.has('from'))
    r.fail(f.get('containerfile')!.key, `${what}: 'containerfile' needs 'from', the oscontainer it builds on`);
  const fromNode = f.get('from')!.value;
  const from = r.string(fromNode, `${what}.from`);
  if (!defined.has(from) && !r.broken.has(from))
    r.fail(
      fromNode,
      `${what}.from '${from}' is not an oscontainer defined above it`,
      `define it first under oscontainers: (${[...defined.keys()].join(', ') || 'none yet'})`,
    );
  let context = dirname(containerfile);
  if (f.has('context')) {
    const node = f.get('context')!.value;
    context = r.path(r.string(node, `${what}.context`));
    if (r.env.pathKind(context) !== 'directory')
      r.fail(
        node,
        `${what}.context: ${context} is not a directory`,
        'the build context podman reads COPY sources from',
      );
  }
  return { kind: 'build-containerfile', containerfile, context, from };
}
