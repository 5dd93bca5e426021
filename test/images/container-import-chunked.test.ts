/**
 * A chunked native image through the fixture's container import (images/fixture/guest/container-import.sh), run on
 * this host with busybox sh as the guest runs it, against real ostree and skopeo and devpivot's registry on
 * loopback: v1 imports every layer and gives each chunk its blob ref (an object set, as ostree-ext writes it);
 * v2, where one package changed, fetches only the layers that differ (the registry's request log says so) and
 * still checks out to exactly v2's tree.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import { buildAndPush } from '../../src/oscontainer/index.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/server.js';
import { containerImportScript } from './container-import-script.js';

const exec = promisify(execFile);
let dir: string;
let registry: RunningRegistry;
const gets: string[] = [];
const images: Record<string, { pinned: string; digest: string; commit: string }> = {};
const manifests: Record<string, { layers: { digest: string; size: number }[] }> = {};

const ostree = (repo: string, ...args: string[]) =>
  execFileSync('ostree', [`--repo=${repo}`, ...args], { encoding: 'utf8' }).trim();

/** Seven packages of different sizes, so that 4 bins make a real packing (not one bin each). */
const PACKAGES = { big: 400_000, mid1: 90_000, mid2: 80_000, mid3: 70_000, small1: 3_000, small2: 2_000, tiny: 10 };

async function tree(version: string): Promise<string> {
  const root = join(dir, `tree-${version}`);
  for (const [name, size] of Object.entries(PACKAGES)) {
    await mkdir(join(root, 'usr', 'lib', name), { recursive: true });
    // mid2 changes in v2: one package's content, the rest identical
    const seed = name === 'mid2' ? `${name}-${version}` : name;
    await writeFile(join(root, 'usr', 'lib', name, 'data'), Buffer.alloc(size, seed));
  }
  await mkdir(join(root, 'usr', 'etc'), { recursive: true });
  await writeFile(join(root, 'usr', 'etc', 'os-release'), `VERSION_ID=${version}\n`); // unpackaged
  return root;
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-import-chunked-'));
  const bus = new EventBus();
  bus.on('registry.request', (e) => {
    if (e.method === 'GET' && e.status === 200 && e.path.includes('/blobs/')) gets.push(e.path.split('/').pop()!);
  });
  registry = await startRegistry({ storage: join(dir, 'registry'), port: 0, bus });
  const source = join(dir, 'source');
  ostree(source, 'init', '--mode=archive');
  const components = join(dir, 'components');
  await writeFile(
    components,
    Object.keys(PACKAGES)
      .map((name) => `${name} 1.0 usr/lib/${name}/data\n`)
      .join(''),
  );
  for (const version of ['1', '2']) {
    const commit = ostree(
      source,
      'commit',
      `--branch=test/v${version}`,
      `--tree=dir=${await tree(version)}`,
      `--add-metadata-string=version=${version}`,
      `--timestamp=@${1700000000 + Number(version)}`,
    );
    images[version] = await buildAndPush({
      repo: source,
      commit,
      format: 'native',
      layers: 4,
      components,
      target: `${registry.address}/os:v${version}`,
    });
    const raw = await fetch(`http://${registry.address}/v2/os/manifests/${images[version]!.digest}`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    manifests[version] = (await raw.json()) as { layers: { digest: string; size: number }[] };
  }
  await writeFile(join(dir, 'registries.conf'), `[[registry]]\nlocation = "${registry.address}"\ninsecure = true\n`);
});

test.after.always(async () => {
  await registry?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** ci_fetch, ci_layers, ci_import of IMAGE into REPO; what it printed and the merge commit. */
async function importInto(repo: string, image: string) {
  const script = containerImportScript(
    repo,
    join(dir, 'registries.conf'),
    'ci_fetch "$1" && ci_check_bootable && ci_layers && echo "present=$ci_stored needed=$ci_needed" &&\n' +
      '  ci_import "$1" && echo "merge=$ci_merge"',
  );
  const { stdout } = await exec('busybox', ['sh', '-c', script, 'import', image]);
  return stdout;
}

const blobRef = (digest: string) => `ostree/container/blob/sha256_3A_${digest.slice('sha256:'.length)}`;

test('v1 imports every layer; v2 fetches only the layers that changed and checks out as v2', async (t) => {
  const v1 = manifests['1']!.layers.map((l) => l.digest);
  const v2 = manifests['2']!.layers.map((l) => l.digest);
  t.is(v1.length, 5, 'the commit layer and 4 chunks');
  const changed = v2.filter((digest) => !v1.includes(digest));
  // The commit layer (new commit), mid2's chunk, and the unpackaged content (os-release)'s.
  t.is(changed.length, 3, `changed layers: ${changed.join(' ')}`);

  const repo = join(dir, 'repo');
  ostree(repo, 'init', '--mode=bare');
  gets.length = 0;
  const first = await importInto(repo, images['1']!.pinned);
  t.regex(first, /^present=0 needed=5$/m);
  t.deepEqual(gets.filter((g) => v1.includes(g)).sort(), [...v1].sort(), 'v1: every layer fetched');
  // Every chunk has its blob ref: a commit whose root lists the chunk's objects by checksum.
  for (const digest of v1) t.true(ostree(repo, 'rev-parse', blobRef(digest)).length === 64, digest);
  const chunkRef = blobRef(v1[1]!);
  const listing = ostree(repo, 'ls', chunkRef, '/');
  t.regex(listing, /[0-9a-f]{64}$/m, 'the object set names its objects by checksum');
  // ... and each name is that content object's own checksum (`ls -C`: the file's checksum, then its name)
  const entries = ostree(repo, 'ls', '-C', chunkRef, '/')
    .split('\n')
    .filter((line) => line.startsWith('-'));
  t.true(entries.length > 0);
  for (const entry of entries) {
    const [checksum, path] = entry.trim().split(/\s+/).slice(-2);
    t.is(`/${checksum}`, path ?? '', entry);
  }

  gets.length = 0;
  const second = await importInto(repo, images['2']!.pinned);
  t.regex(second, /^present=2 needed=3$/m);
  t.deepEqual(gets.filter((g) => v2.includes(g)).sort(), [...changed].sort(), 'v2: only the changed layers fetched');
  const merge = /^merge=([0-9a-f]{64})$/m.exec(second)![1]!;
  // The merged tree is v2's: the same root contents checksum as the commit that was built.
  const treeOf = (rev: string) => ostree(repo, 'ls', '-C', '-d', rev, '/').split(/\s+/)[4];
  t.is(treeOf(merge), treeOf(images['2']!.commit));
  t.is(ostree(repo, 'cat', merge, '/usr/etc/os-release'), 'VERSION_ID=2');
  t.notThrows(() => ostree(repo, 'fsck'), 'every object of both images is in the repo and intact');
});
