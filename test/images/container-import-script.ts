/**
 * Test helper: a busybox sh script that sources the fixture's container import (images/fixture/guest/
 * container-import.sh) as the stand-ins do, on the system repository REPO, skopeo reading REGISTRIES_CONF, then runs
 * BODY (its image is "$1").
 */
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';

export function containerImportScript(repo: string, registriesConf: string, body: string): string {
  return [
    `repo=${repo}`,
    'die() { echo "error: $*" >&2; exit 1; }',
    `skopeo() { command skopeo --registries-conf ${registriesConf} "$@"; }`,
    `. ${join(repoRoot, 'images', 'fixture', 'guest', 'container-import.sh')}`,
    `ci_tmp=${repo}-import`,
    body,
  ].join('\n');
}
