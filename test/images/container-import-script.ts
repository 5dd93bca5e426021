/**
 * Test helper: a busybox sh script that sources the fixture's container import (images/fixture/guest/
 * container-import.sh) as the stand-ins do, on the system repository REPO, skopeo reading REGISTRIES_CONF, then runs
 * BODY (its image is "$1"). OSTREE_EXT: the file naming the ostree-ext whose reader the importer follows (as
 * /etc/devpivot/ostree-ext on a node); by default none, whatever this host's /etc holds.
 */
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';

export function containerImportScript(
  repo: string,
  registriesConf: string,
  body: string,
  ostreeExt = `${repo}-no-ostree-ext`,
): string {
  return [
    `repo=${repo}`,
    `ci_ostree_ext_file=${ostreeExt}`,
    'die() { echo "error: $*" >&2; exit 1; }',
    `skopeo() { command skopeo --registries-conf ${registriesConf} "$@"; }`,
    `. ${join(repoRoot, 'images', 'fixture', 'guest', 'container-import.sh')}`,
    `ci_tmp=${repo}-import`,
    body,
  ].join('\n');
}
