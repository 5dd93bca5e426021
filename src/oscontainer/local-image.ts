/**
 * Local images (`containers-storage:`, `oci-archive:`, `oci:`; oci/local-source.ts) into a registry, through
 * real skopeo: checked before anything starts (`localImageProblem`), then copied by skopeo into a private OCI
 * layout, byte for byte where it can (`--preserve-digests`, every platform of an index: `--all`), and from there
 * into the registry by copyImage, which reports each blob's bytes (`image.progress`) and emits the one
 * `image.pulled`. containers-storage keeps layers uncompressed: an image podman built keeps its digest (its
 * manifest names the uncompressed layers); one podman pulled from a registry cannot (its manifest names the
 * compressed blobs the storage no longer has), so skopeo writes a new manifest and a log line says so.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import { run } from '../core/exec.js';
import { formatLocalSource, type LocalSource } from '../oci/local-source.js';
import type { ImageIndex } from '../oci/manifest.js';
import { type CopyOptions, type CopyResult, copyImage } from './copy.js';
import { chooseLayoutEntry } from './layout-source.js';

export interface LocalImageProblem {
  code: 'LOCAL_IMAGE_NOT_FOUND' | 'LOCAL_IMAGE_AMBIGUOUS';
  message: string;
  hint: string;
}

/** skopeo's own words: its last `level=fatal msg="…"` or `Error: …` line. */
function skopeoSays(stderr: string): string {
  const lines = stderr.trim().split('\n').filter(Boolean);
  const last = lines[lines.length - 1] ?? '';
  return /msg="(.*)"$/.exec(last)?.[1]?.replace(/\\"/g, '"') ?? last.replace(/^Error: /, '');
}

/**
 * What is wrong with `source` before anything starts, or undefined: the podman image is there (skopeo reads the
 * calling user's storage), the archive or layout exists and names exactly one image (or has the REF given).
 */
export function localImageProblem(
  source: LocalSource,
  env: NodeJS.ProcessEnv = process.env,
): LocalImageProblem | undefined {
  const text = formatLocalSource(source);
  if (source.transport === 'containers-storage') {
    const result = spawnSync('skopeo', ['inspect', '--raw', text], { encoding: 'utf8', env, timeout: 60_000 });
    if (result.error)
      return {
        code: 'LOCAL_IMAGE_NOT_FOUND',
        message: `${text}: skopeo cannot run (${result.error.message})`,
        hint: 'install skopeo (npm run setup)',
      };
    if (result.status !== 0)
      return {
        code: 'LOCAL_IMAGE_NOT_FOUND',
        message: `${text}: no such image in ${process.getuid?.() === 0 ? "root's" : "this user's"} podman storage (skopeo: ${skopeoSays(result.stderr)})`,
        hint: 'list the images there with podman images (root and each user have their own storage)',
      };
    return undefined;
  }
  let indexText: string;
  if (source.transport === 'oci') {
    try {
      indexText = readFileSync(join(source.path, 'index.json'), 'utf8');
    } catch {
      return {
        code: 'LOCAL_IMAGE_NOT_FOUND',
        message: `${text}: ${source.path} is not an OCI layout directory (no readable index.json)`,
        hint: 'name a directory skopeo copy … oci:DIR made, or fix the path',
      };
    }
  } else {
    // --occurrence=1: tar stops at the first index.json instead of reading a large archive to its end. An
    // archive made with `tar -C DIR .` names it ./index.json (containers/image reads both: it extracts the tar).
    const extract = (name: string) =>
      spawnSync('tar', ['--occurrence=1', '-xOf', source.path, name], { encoding: 'utf8', maxBuffer: 16 << 20 });
    let read = extract('index.json');
    if (read.status !== 0 && !read.error) read = extract('./index.json');
    if (read.status !== 0)
      return {
        code: 'LOCAL_IMAGE_NOT_FOUND',
        message: `${text}: ${source.path} is not an OCI archive (${read.stderr.trim().split('\n')[0] || 'no index.json in it'})`,
        hint: 'name a tar of an OCI layout (skopeo copy … oci-archive:FILE, podman save --format oci-archive)',
      };
    indexText = read.stdout;
  }
  try {
    chooseLayoutEntry(JSON.parse(indexText) as ImageIndex, source.ref, text);
  } catch (error) {
    if (error instanceof DevpivotError)
      return {
        code: error.code === 'LOCAL_IMAGE_AMBIGUOUS' ? error.code : 'LOCAL_IMAGE_NOT_FOUND',
        message: error.message,
        hint: error.hint ?? '',
      };
    return {
      code: 'LOCAL_IMAGE_NOT_FOUND',
      message: `${text}: index.json is not JSON`,
      hint: 'the layout is damaged: make it again',
    };
  }
  return undefined;
}

/** Copy a local image into `destination` (a registry reference) with skopeo, then copyImage. */
export async function importLocalImage(
  source: LocalSource,
  destination: string,
  options: CopyOptions & { bus?: EventBus } = {},
): Promise<CopyResult> {
  const problem = localImageProblem(source, options.env);
  if (problem) throw new DevpivotError(problem.code, problem.message, { hint: problem.hint, exitCode: 2 });
  const text = formatLocalSource(source);
  const work = await mkdtemp(join(options.workDir ?? tmpdir(), 'devpivot-local-'));
  try {
    const layout = `oci:${join(work, 'layout')}:image`;
    const copy = (preserve: boolean) =>
      run('skopeo', ['copy', '--all', ...(preserve ? ['--preserve-digests'] : []), text, layout], {
        env: options.env,
        timeoutMs: 30 * 60_000,
        signal: options.signal, // Ctrl-C ends skopeo at once: it neither delays the stop nor outlives it
      });
    let result = await copy(true);
    options.signal?.throwIfAborted();
    if (
      result.code !== 0 &&
      source.transport === 'containers-storage' &&
      /changing layer representation/.test(result.stderr)
    ) {
      options.bus?.emit({
        kind: 'log',
        level: 'info',
        source: 'oscontainer',
        message: `${text}: podman's storage keeps this image's layers uncompressed, so its registry digest cannot be kept: skopeo writes a new manifest`,
      });
      result = await copy(false);
      options.signal?.throwIfAborted();
    }
    if (result.code !== 0)
      throw new DevpivotError('LOCAL_IMAGE_COPY', `skopeo copy ${text}: ${skopeoSays(result.stderr)}`, {
        hint: result.spawnError ? 'install skopeo (npm run setup)' : 'run the same skopeo copy by hand to see more',
      });
    for (const line of result.stdout.split('\n').filter((l) => l.startsWith('Copying ')))
      options.bus?.emit({ kind: 'log', level: 'debug', source: 'oscontainer', message: `skopeo: ${line}` });
    return await copyImage(layout, destination, options);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
