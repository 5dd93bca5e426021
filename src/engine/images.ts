import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { EventBus } from '../core/bus.js';
import { DevpivotError, ExitCode } from '../core/errors.js';
import type { ImageSource } from '../scenario/types.js';
import type { FixtureArtifacts } from './deps.js';
import { downloadImage } from './image-download.js';

/** The version entry of the fixture for `fixture:N`, or a set-up error naming the versions there are. */
export function fixtureVersion(fixture: FixtureArtifacts, version: string) {
  const found = fixture.versions.find((entry) => entry.version === version);
  if (!found)
    throw new DevpivotError(
      'FIXTURE_VERSION',
      `the fixture OS has no version '${version}' (it has ${fixture.versions.map((v) => v.version).join(', ')})`,
      { hint: 'use fixture:N with one of those versions', exitCode: ExitCode.usage },
    );
  return found;
}

/** A local qcow2 path for an image source: the fixture's disk, a checked local file, or a checked download. */
export async function resolveImage(
  name: string,
  source: ImageSource,
  context: { fixture: () => Promise<FixtureArtifacts>; cacheDir: string; signal: AbortSignal; bus?: EventBus },
): Promise<string> {
  switch (source.kind) {
    case 'fixture': {
      const fixture = await context.fixture();
      const entry = fixtureVersion(fixture, source.version);
      const disk = entry.disk ?? (fixture.versions[0] === entry ? fixture.disk : undefined);
      if (!disk)
        throw new DevpivotError(
          'FIXTURE_NO_DISK',
          `the fixture OS has no bootable disk for version ${source.version}`,
          {
            hint: `boot the first version (fixture:${fixture.versions[0]?.version ?? 1}) and pivot to this one`,
            exitCode: ExitCode.usage,
          },
        );
      return disk;
    }
    case 'path': {
      try {
        await stat(source.path);
      } catch (error) {
        throw new DevpivotError('IMAGE_NOT_FOUND', `image '${name}': ${source.path} does not exist`, {
          hint: 'fix the path in the scenario (relative paths start at the scenario file)',
          exitCode: ExitCode.usage,
          cause: error,
        });
      }
      if (source.sha256) await verify(name, source.path, source.sha256, context.signal);
      return source.path;
    }
    case 'url': {
      const target = join(context.cacheDir, 'images', `${source.sha256}.qcow2`);
      try {
        await stat(target);
        return target;
      } catch {
        // not cached yet
      }
      await mkdir(join(context.cacheDir, 'images'), { recursive: true });
      await downloadImage({
        name,
        url: source.url,
        sha256: source.sha256,
        target,
        signal: context.signal,
        onProgress: (done, total) =>
          context.bus?.emit({ kind: 'image.progress', ref: name, phase: 'download', done, total }),
      });
      return target;
    }
  }
}

async function verify(name: string, file: string, expected: string, signal: AbortSignal): Promise<void> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash, { signal });
  const actual = hash.digest('hex');
  if (actual !== expected)
    throw new DevpivotError('IMAGE_CHECKSUM', `image '${name}': ${file} has sha256 ${actual}, expected ${expected}`, {
      hint: 'the file is not the one the scenario names: fix the sha256 or the file',
      exitCode: ExitCode.usage,
    });
}
