/**
 * The fixture's container import (images/fixture/guest/container-import.sh) on what users bring, run on this host
 * with busybox sh as the guest runs it, against real ostree, skopeo and podman and devpivot's registry on loopback:
 * derived layers (a podman build FROM a native image: /usr kept, /etc remapped to /usr/etc, /var filtered, a
 * whiteout processed in the merge), the same pushed with zstd layers, a multi-arch index made by podman manifest
 * (the linux/amd64 child is imported and its digest stored), and a layer media type the importer cannot read.
 */
import { execFile, execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { execa } from 'execa';
import { buildAndPush } from '../../src/oscontainer/index.js';
import { RegistryClient } from '../../src/oscontainer/registry-client.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/server.js';
import { containerImportScript } from './container-import-script.js';

const exec = promisify(execFile);
let dir: string;
let registry: RunningRegistry;
let native: { pinned: string; digest: string; commit: string };
const tags: string[] = [];

const ostree = (repo: string, ...args: string[]) =>
  execFileSync('ostree', [`--repo=${repo}`, ...args], { encoding: 'utf8' }).trim();

async function podmanPush(tag: string, target: string, ...flags: string[]): Promise<string> {
  const file = join(dir, `${tags.length}.digest`);
  await execa('podman', ['push', '--tls-verify=false', ...flags, '--digestfile', file, tag, `docker://${target}`]);
  return `${target.replace(/:[^:/]+$/, '')}@${(await readFile(file, 'utf8')).trim()}`;
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-import-layers-'));
  registry = await startRegistry({ storage: join(dir, 'registry'), port: 0 });
  // A native base: busybox (for the Containerfile's RUN), a file the derived image removes.
  const tree = join(dir, 'tree');
  await mkdir(join(tree, 'usr', 'bin'), { recursive: true });
  await mkdir(join(tree, 'usr', 'share'), { recursive: true });
  await mkdir(join(tree, 'usr', 'etc'), { recursive: true });
  await copyFile('/bin/busybox', join(tree, 'usr', 'bin', 'busybox'));
  await writeFile(join(tree, 'usr', 'share', 'gone'), 'removed in the derived image\n');
  await writeFile(join(tree, 'usr', 'lib-os-release'), 'ID=test\n');
  const source = join(dir, 'source');
  ostree(source, 'init', '--mode=archive');
  const commit = ostree(source, 'commit', '--branch=test/v2', `--tree=dir=${tree}`, '--add-metadata-string=version=2');
  native = await buildAndPush({
    repo: source,
    commit,
    format: 'native',
    oci: true,
    target: `${registry.address}/os:v2`,
  });
  // The derived image, built by podman FROM the native one.
  const context = join(dir, 'context');
  await mkdir(context);
  await writeFile(join(context, 'hello'), 'derived hello\n');
  await writeFile(join(context, 'x.conf'), 'derived=yes\n');
  await writeFile(
    join(context, 'Containerfile'),
    'ARG BASE\nFROM $BASE\nCOPY hello /usr/share/derived/hello\nCOPY x.conf /etc/x.conf\nCOPY hello /var/lib/dropped\n' +
      'RUN ["/usr/bin/busybox", "rm", "/usr/share/gone"]\n',
  );
  const tag = `localhost/devpivot-test/import-layers:${process.pid}`;
  tags.push(tag);
  await execa('podman', [
    'build',
    '--quiet',
    '--isolation=chroot',
    '--tls-verify=false',
    '--build-arg',
    `BASE=${native.pinned}`,
    '--tag',
    tag,
    context,
  ]);
  await writeFile(join(dir, 'registries.conf'), `[[registry]]\nlocation = "${registry.address}"\ninsecure = true\n`);
});

test.after.always(async () => {
  await registry?.stop();
  for (const tag of tags) await execa('podman', ['rmi', '--force', tag], { reject: false });
  await execa('podman', ['manifest', 'rm', `localhost/devpivot-test/import-index:${process.pid}`], { reject: false });
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** podman manifest push --all of LIST to the registry as TARGET; the index's digest. */
async function pushList(list: string, target: string): Promise<string> {
  const file = join(dir, 'index.digest');
  const args = ['manifest', 'push', '--all', '--tls-verify=false', '--digestfile', file, list];
  await execa('podman', [...args, `docker://${registry.address}/${target}`]);
  return (await readFile(file, 'utf8')).trim();
}

/**
 * ci_fetch, ci_check_bootable, ci_import of IMAGE into a fresh bare repo; the facts it printed. `ostreeExt`: the
 * ostree-ext version the node's file names (the mcd driver's "0.11"), none by default; `registriesConf`: skopeo's
 * (a test with a registry of its own writes its own: the tests run at once).
 */
async function importImage(image: string, ostreeExt?: string, registriesConf = join(dir, 'registries.conf')) {
  const repo = join(dir, `repo-${Math.random().toString(36).slice(2)}`);
  ostree(repo, 'init', '--mode=bare');
  let model: string | undefined;
  if (ostreeExt !== undefined) {
    model = `${repo}-ostree-ext`;
    await writeFile(model, `${ostreeExt}\n`);
  }
  const script = containerImportScript(
    repo,
    registriesConf,
    'ci_fetch "$1" && ci_check_bootable && ci_import "$1" && echo "$ci_digest $ci_merge $ci_base"',
    model,
  );
  try {
    const { stdout, stderr } = await exec('busybox', ['sh', '-c', script, 'import', image]);
    const [digest, merge, base] = stdout.trim().split(' ');
    return { code: 0, repo, digest, merge: merge!, base: base!, stderr };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, repo, digest: '', merge: '', base: '', stderr: failed.stderr };
  }
}

test('derived layers: one commit each, /etc under /usr/etc, /var filtered, the whiteout applied in the merge', async (t) => {
  const pinned = await podmanPush(tags[0]!, `${registry.address}/derived:gzip`);
  const run = await importImage(pinned);
  t.is(run.code, 0, run.stderr);
  t.is(run.digest, pinned.slice(pinned.indexOf('@') + 1));
  t.is(run.base, native.commit);
  // Besides the Containerfile's own changes, buildah's RUN leaves its mount points (/etc/hosts, /dev, …) in the
  // layer, and ostree-ext imports them too (etc/hosts -> usr/etc/hosts).
  const diff = ostree(run.repo, 'diff', run.base, run.merge).split('\n');
  for (const line of [
    'A    /usr/etc/x.conf',
    'A    /usr/share/derived/hello',
    'D    /usr/share/gone',
    'A    /usr/etc/hosts',
  ])
    t.true(diff.includes(line), `${line} in\n${diff.join('\n')}`);
  t.false(
    diff.some((line) => line.includes('/var') || line.endsWith(' /etc') || line.includes(' /etc/')),
    diff.join('\n'),
  );
  t.is(diff.filter((line) => line.startsWith('D ')).length, 1);
  t.is(ostree(run.repo, 'cat', run.merge, '/usr/etc/x.conf'), 'derived=yes');
  t.regex(run.stderr, /path\(s\) outside \/usr and \/etc filtered/);
  // A commit per derived layer under its blob ref, besides the base's.
  const manifest = JSON.parse(ostree(run.repo, 'show', '--print-metadata-key=ostree.manifest', run.merge).slice(1, -1));
  const blobRefs = ostree(run.repo, 'refs')
    .split('\n')
    .filter((ref) => ref.startsWith('ostree/container/blob/'));
  t.is(blobRefs.length, manifest.layers.length);
});

test('zstd layers (podman push --compression-format zstd) import to the same tree', async (t) => {
  // A registry of its own: where podman knows a gzip copy of a blob, it reuses it instead of compressing anew.
  const other = await startRegistry({ storage: join(dir, 'registry-zstd'), port: 0 });
  t.teardown(() => other.stop());
  const conf = join(dir, 'registries-zstd.conf');
  await writeFile(conf, `[[registry]]\nlocation = "${other.address}"\ninsecure = true\n`);
  const pinned = await podmanPush(tags[0]!, `${other.address}/derived:zstd`, '--compression-format', 'zstd');
  const client = new RegistryClient(other.address);
  const manifest = JSON.parse((await client.getManifest('derived', 'zstd')).bytes.toString('utf8'));
  t.true(
    manifest.layers.every((l: { mediaType: string }) => l.mediaType === 'application/vnd.oci.image.layer.v1.tar+zstd'),
  );
  const run = await importImage(pinned, undefined, conf);
  t.is(run.code, 0, run.stderr);
  t.is(run.base, native.commit);
  t.is(ostree(run.repo, 'cat', run.merge, '/usr/share/derived/hello'), 'derived hello');
  t.true(ostree(run.repo, 'diff', run.base, run.merge).split('\n').includes('D    /usr/share/gone'));
  // An mcd node (RHCOS 4.13: ostree-ext before 0.13.4) refuses them, in the base's context: its layers are zstd too.
  const old = await importImage(pinned, '0.11', conf);
  t.is(old.code, 1);
  t.regex(
    old.stderr,
    /^error: Importing: Unencapsulating base: Unhandled layer type: application\/vnd\.oci\.image\.layer\.v1\.tar\+zstd$/m,
  );
  t.false(ostree(old.repo, 'refs').includes('ostree/container/image/'));
});

test("ostree-ext 0.11's reader (an mcd node): gzip imports; zstd only in the derived layers is refused without the base's context", async (t) => {
  const gzip = await importImage(await podmanPush(tags[0]!, `${registry.address}/derived:gzip-old`), '0.11');
  t.is(gzip.code, 0, gzip.stderr);
  t.is(ostree(gzip.repo, 'cat', gzip.merge, '/usr/share/derived/hello'), 'derived hello');
  // Where the registry has the base's gzip blob (and no copy of the derived ones), podman reuses it: only the
  // derived layers are compressed anew, as zstd (osbuild/bootc-image-builder#236 met this with a zstd:chunked push;
  // ostreedev/ostree-rs-ext#608).
  const other = await startRegistry({ storage: join(dir, 'registry-mixed'), port: 0 });
  t.teardown(() => other.stop());
  const conf = join(dir, 'registries-mixed.conf');
  await writeFile(conf, `[[registry]]\nlocation = "${other.address}"\ninsecure = true\n`);
  await execa('skopeo', [
    'copy',
    '--src-tls-verify=false',
    '--dest-tls-verify=false',
    `docker://${native.pinned}`,
    `docker://${other.address}/derived:base`,
  ]);
  const mixed = await podmanPush(tags[0]!, `${other.address}/derived:mixed`, '--compression-format', 'zstd');
  const client = new RegistryClient(other.address);
  const manifest = JSON.parse(
    (await client.getManifest('derived', mixed.slice(mixed.indexOf('@') + 1))).bytes.toString('utf8'),
  );
  const types = manifest.layers.map((l: { mediaType: string }) => l.mediaType);
  t.is(types[0], 'application/vnd.oci.image.layer.v1.tar+gzip', types.join(' '));
  t.is(types.at(-1), 'application/vnd.oci.image.layer.v1.tar+zstd', types.join(' '));
  const old = await importImage(mixed, '0.11', conf);
  t.is(old.code, 1);
  t.regex(old.stderr, /^error: Importing: Unhandled layer type: application\/vnd\.oci\.image\.layer\.v1\.tar\+zstd$/m);
  t.false(ostree(old.repo, 'refs').includes('ostree/container/image/'));
  // today's reader imports the same image
  const today = await importImage(mixed, undefined, conf);
  t.is(today.code, 0, today.stderr);
});

test('a layer media type the importer cannot read: ostree-ext\'s "Unhandled layer type", nothing merged', async (t) => {
  const pinned = await podmanPush(tags[0]!, `${registry.address}/derived:odd`);
  const client = new RegistryClient(registry.address);
  const fetched = await client.getManifest('derived', pinned.slice(pinned.indexOf('@') + 1));
  const manifest = JSON.parse(fetched.bytes.toString('utf8'));
  manifest.layers.at(-1).mediaType = 'application/vnd.oci.image.layer.v1.tar+bzip2';
  const bytes = Buffer.from(JSON.stringify(manifest));
  const digest = await client.putManifest('derived', 'odd', bytes, fetched.mediaType);
  const run = await importImage(`${registry.address}/derived@${digest}`);
  t.is(run.code, 1);
  t.regex(
    run.stderr,
    /^error: Importing: Layer sha256:[0-9a-f]{64}: Unhandled layer type: application\/vnd\.oci\.image\.layer\.v1\.tar\+bzip2$/m,
  );
  t.false(ostree(run.repo, 'refs').includes('ostree/container/image/'));
});

test('a multi-arch index by podman manifest: the linux/amd64 child is imported and its digest stored', async (t) => {
  const context = join(dir, 'arm64');
  await mkdir(context);
  await writeFile(
    join(context, 'Containerfile'),
    'FROM scratch\nCOPY Containerfile /usr/share/arm64\nLABEL containers.bootc=1\n',
  );
  const arm = `localhost/devpivot-test/import-arm64:${process.pid}`;
  tags.push(arm);
  await execa('podman', ['build', '--quiet', '--platform', 'linux/arm64', '--tag', arm, context]);
  const list = `localhost/devpivot-test/import-index:${process.pid}`;
  await execa('podman', ['manifest', 'create', list]);
  await execa('podman', ['manifest', 'add', '--tls-verify=false', list, `docker://${native.pinned}`]);
  await execa('podman', ['manifest', 'add', list, `containers-storage:${arm}`]);
  const index = await pushList(list, 'multi:1');
  const run = await importImage(`${registry.address}/multi@${index}`);
  t.is(run.code, 0, run.stderr);
  t.is(run.digest, native.digest, "the child's digest, not the index's");
  t.is(ostree(run.repo, 'show', '--print-metadata-key=ostree.manifest-digest', run.merge), `'${native.digest}'`);
  // An index without a linux/amd64 image: containers/image's words.
  const armOnly = `localhost/devpivot-test/import-arm-only:${process.pid}`;
  await execa('podman', ['manifest', 'create', armOnly]);
  t.teardown(() => execa('podman', ['manifest', 'rm', armOnly], { reject: false }));
  await execa('podman', ['manifest', 'add', armOnly, `containers-storage:${arm}`]);
  const refused = await importImage(`${registry.address}/multi@${await pushList(armOnly, 'multi:arm')}`);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /no image found in manifest list for architecture "amd64", variant "", OS "linux"/);
});
