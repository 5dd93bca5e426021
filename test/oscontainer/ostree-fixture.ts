/** Test helper: a small archive ostree repo with two versioned commits, made with the real ostree CLI. */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestRepo {
  dir: string;
  repo: string;
  v1: string;
  v2: string;
}

/** `randomKiB` of incompressible data in v2 makes the layer big enough to cut mid-blob. */
export async function makeTestRepo(randomKiB = 64): Promise<TestRepo> {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-ostree-'));
  const tree = join(dir, 'tree');
  const repo = join(dir, 'repo');
  await mkdir(join(tree, 'usr', 'bin'), { recursive: true });
  await mkdir(join(tree, 'usr', 'lib', 'os-release.d'), { recursive: true });
  await writeFile(join(tree, 'usr', 'bin', 'hello'), '#!/bin/sh\necho hello\n', { mode: 0o755 });
  await writeFile(join(tree, 'usr', 'lib', 'os-release'), 'NAME=devpivot-test\nVERSION_ID=1\n');
  const ostree = (...args: string[]) => execFileSync('ostree', args, { encoding: 'utf8' }).trim();
  ostree('init', '--mode=archive', `--repo=${repo}`);
  const commit = (version: string) =>
    ostree(
      'commit',
      `--repo=${repo}`,
      '--branch=testos/stable',
      `--tree=dir=${tree}`,
      `--add-metadata-string=version=${version}`,
      `--subject=v${version}`,
      '--timestamp=2024-01-01T00:00:00Z',
    );
  const v1 = commit('1.0');
  await writeFile(join(tree, 'usr', 'lib', 'os-release'), 'NAME=devpivot-test\nVERSION_ID=2\n');
  await writeFile(join(tree, 'usr', 'lib', 'payload.bin'), randomBytes(randomKiB * 1024));
  const v2 = commit('2.0');
  return { dir, repo, v1, v2 };
}
