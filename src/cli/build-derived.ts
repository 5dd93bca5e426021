/**
 * `devpivot build --containerfile FILE --from REF --push REF [--context DIR]`: a derived image built by podman on
 * this host from a Containerfile that says `ARG BASE` / `FROM $BASE` (oscontainer/derived.ts), BASE being REF.
 */
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { UsageError } from '../core/errors.js';
import { parseReference } from '../oci/reference.js';
import { buildDerivedImage } from '../oscontainer/api.js';

const isKind = (path: string, kind: 'file' | 'directory') => {
  try {
    const info = statSync(path);
    return kind === 'file' ? info.isFile() : info.isDirectory();
  } catch {
    return false;
  }
};

export async function buildDerivedCommand(options: {
  containerfile: string;
  from: string | undefined;
  push: string | undefined;
  context: string | undefined;
  bus: EventBus;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
}): Promise<{ pinned: string; digest: string; version: string; commit: string }> {
  const containerfile = resolve(options.containerfile);
  if (!isKind(containerfile, 'file'))
    throw new UsageError(
      `--containerfile: ${containerfile} is not a file`,
      'a Containerfile saying ARG BASE / FROM $BASE',
    );
  if (!options.from)
    throw new UsageError('--containerfile needs --from REF', 'the base image, e.g. 127.0.0.1:5000/os/v2@sha256:…');
  if (!options.push)
    throw new UsageError(
      '--containerfile needs --push REF',
      'the registry to push the derived image to (HOST:PORT/REPO:TAG)',
    );
  parseReference(options.from);
  parseReference(options.push);
  const context = resolve(options.context ?? dirname(containerfile));
  if (!isKind(context, 'directory'))
    throw new UsageError(`--context: ${context} is not a directory`, 'the build context');
  return buildDerivedImage({
    containerfile,
    context,
    base: options.from,
    target: options.push,
    bus: options.bus,
    env: options.env,
    signal: options.signal,
  });
}
