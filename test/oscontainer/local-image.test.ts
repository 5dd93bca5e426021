/**
 * Local images into the embedded registry through real podman and skopeo: root's podman storage, an OCI
 * archive, an OCI layout with several refs; then the errors before anything starts; then a normal user's own
 * podman storage (rootless podman), which root's copy cannot see.
 */
import { chmodSync, chownSync, mkdtempSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { execa } from 'execa';
import { EventBus } from '../../src/core/bus.js';
import type { DevpivotEvent } from '../../src/core/events.js';
import { parseLocalSource } from '../../src/oci/local-source.js';
import { mirrorOscontainer } from '../../src/oscontainer/api.js';
import { localImageProblem } from '../../src/oscontainer/local-image.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/server.js';
import { binPath } from '../helpers/cli.js';
import { ensureTestUser, privateHome, readableCheckout, runAsUser } from '../helpers/unprivileged-user.js';
import { skopeoInspect } from './skopeo.js';

const TAG = `localhost/devpivot-test/local-image:${process.pid}`;
let dir: string;
let embedded: RunningRegistry;
let podmanDigest: string;

/** A small bootable-labelled image built by podman (FROM scratch: no network), two layers. */
async function buildImage(context: string, tag: string, version: string, env?: NodeJS.ProcessEnv) {
  await mkdir(context, { recursive: true });
  await writeFile(join(context, 'a'), `a ${version}\n`);
  await writeFile(join(context, 'b'), Buffer.alloc(300_000, version));
  await writeFile(
    join(context, 'Containerfile'),
    `FROM scratch\nCOPY a /usr/share/a\nCOPY b /usr/share/b\nLABEL ostree.bootable=1 ostree.commit=${'c'.repeat(64)} version=${version}\n`,
  );
  await execa('podman', ['build', '--quiet', '--tag', tag, context], env ? { env } : {});
}

test.before(async () => {
  dir = await mkdtemp();
  await buildImage(join(dir, 'context'), TAG, '7.1');
  podmanDigest = (await execa('podman', ['image', 'inspect', '--format', '{{.Digest}}', TAG])).stdout.trim();
  await execa('skopeo', [
    'copy',
    '--quiet',
    `containers-storage:${TAG}`,
    `oci-archive:${join(dir, 'one.ociarchive')}:one`,
  ]);
  // A layout with two images, and the same as an archive.
  for (const ref of ['first', 'second'])
    await execa('skopeo', ['copy', '--quiet', `containers-storage:${TAG}`, `oci:${join(dir, 'two')}:${ref}`]);
  await execa('tar', ['-cf', join(dir, 'two.ociarchive'), '-C', join(dir, 'two'), '.']);
  embedded = await startRegistry({ storage: join(dir, 'registry'), port: 0 });
});

test.after.always(async () => {
  await embedded?.stop();
  await execa('podman', ['rmi', '--force', TAG], { reject: false });
  if (dir) await rm(dir, { recursive: true, force: true });
});

function mkdtemp() {
  const path = mkdtempSync(join(tmpdir(), 'devpivot-test-local-'));
  chmodSync(path, 0o755);
  return path;
}

function collect() {
  const bus = new EventBus();
  const events: DevpivotEvent[] = [];
  bus.subscribe((event) => events.push(event));
  return { bus, events };
}

test.serial(
  "containers-storage: root's podman image reaches the registry with podman's digest, each blob's bytes reported",
  async (t) => {
    const { bus, events } = collect();
    const image = await mirrorOscontainer(`containers-storage:${TAG}`, `${embedded.address}/local/podman:latest`, {
      bus,
    });
    t.is(image.digest, podmanDigest);
    t.is(image.format, 'native');
    t.is(image.version, '7.1');
    const info = await skopeoInspect(`${embedded.address}/local/podman@${podmanDigest}`);
    t.is(info.Digest, podmanDigest);
    // Every layer and the config: a last progress event with all of its bytes.
    const manifest = await skopeoInspect(`${embedded.address}/local/podman@${podmanDigest}`, '--raw');
    for (const blob of [manifest.config, ...manifest.layers]) {
      const last = events
        .filter((e) => e.kind === 'image.progress' && e.phase === `push ${blob.digest.slice(7, 19)}`)
        .pop() as Extract<DevpivotEvent, { kind: 'image.progress' }> | undefined;
      t.truthy(last, `progress of ${blob.digest}`);
      t.is(last?.done, blob.size);
      t.is(last?.total, blob.size);
    }
    t.is(events.filter((e) => e.kind === 'image.pulled').length, 1);
  },
);

test('oci-archive: the one image of the archive, digest as its index.json names it', async (t) => {
  const archive = join(dir, 'one.ociarchive');
  const index = JSON.parse((await execa('tar', ['-xOf', archive, 'index.json'])).stdout);
  const image = await mirrorOscontainer(`oci-archive:${archive}`, `${embedded.address}/local/archive:latest`);
  t.is(image.digest, index.manifests[0].digest);
  t.is((await skopeoInspect(`${embedded.address}/local/archive:latest`)).Digest, image.digest);
});

test('oci:DIR:REF picks that ref of a layout holding two', async (t) => {
  const image = await mirrorOscontainer(`oci:${join(dir, 'two')}:second`, `${embedded.address}/local/layout:latest`);
  const index = JSON.parse(await readFile(join(dir, 'two', 'index.json'), 'utf8'));
  const second = index.manifests.find(
    (m: { annotations?: Record<string, string> }) => m.annotations?.['org.opencontainers.image.ref.name'] === 'second',
  );
  t.is(image.digest, second.digest);
});

test('before anything starts: a missing image, a wrong path, an archive or layout with several images', (t) => {
  const problem = (text: string) => localImageProblem(parseLocalSource(text)!)?.message ?? '';
  t.regex(problem('containers-storage:localhost/devpivot-test/no-such:1'), /no such image in root's podman storage/);
  t.regex(problem(`oci-archive:${join(dir, 'missing.ociarchive')}`), /is not an OCI archive/);
  t.regex(problem(`oci:${join(dir, 'nowhere')}`), /is not an OCI layout directory/);
  t.regex(problem(`oci-archive:${join(dir, 'two.ociarchive')}`), /holds 2 images \(refs: first, second\)/);
  t.regex(problem(`oci:${join(dir, 'two')}`), /holds 2 images/);
  t.regex(problem(`oci:${join(dir, 'two')}:third`), /has no image named 'third' \(refs: first, second\)/);
  t.is(localImageProblem(parseLocalSource(`oci-archive:${join(dir, 'two.ociarchive')}:first`)!), undefined);
  t.is(localImageProblem(parseLocalSource(`containers-storage:${TAG}`)!), undefined);
});

test('the copy refuses an ambiguous archive with a typed error, and the registry gets nothing', async (t) => {
  const error = await t.throwsAsync(
    mirrorOscontainer(`oci-archive:${join(dir, 'two.ociarchive')}`, `${embedded.address}/local/ambiguous:latest`),
  );
  t.is((error as { code?: string }).code, 'LOCAL_IMAGE_AMBIGUOUS');
  t.regex(error?.message ?? '', /holds 2 images/);
  const tags = await fetch(`http://${embedded.address}/v2/local/ambiguous/tags/list`);
  t.is(tags.status, 404);
});

test("a normal user's own podman storage: devpivot pull reads it (rootless podman), root's copy does not see it", async (t) => {
  const user = ensureTestUser();
  const home = privateHome(user);
  const checkout = readableCheckout(user);
  t.teardown(() => {
    home.remove();
    checkout.remove();
  });
  const env = { HOME: home.home, XDG_RUNTIME_DIR: join(home.home, 'run') };
  const context = join(home.home, 'context');
  await mkdir(env.XDG_RUNTIME_DIR, { mode: 0o700 });
  chownSync(env.XDG_RUNTIME_DIR, user.uid, user.gid);
  const tag = 'localhost/devpivot-test/rootless:1';
  // podman build as the user, in the user's storage under their HOME.
  const files = { a: 'a rootless\n', Containerfile: 'FROM scratch\nCOPY a /usr/share/a\nLABEL version=9\n' };
  await mkdir(context);
  for (const [name, text] of Object.entries(files)) await writeFile(join(context, name), text);
  chownSync(context, user.uid, user.gid);
  const built = runAsUser(user, env, 'podman', ['build', '--quiet', '--tag', tag, context], { timeoutMs: 120_000 });
  t.is(built.status, 0, built.stderr);
  const digest = runAsUser(user, env, 'podman', ['image', 'inspect', '--format', '{{.Digest}}', tag]).stdout.trim();
  const out = join(home.home, 'out');
  const pulled = runAsUser(
    user,
    env,
    process.execPath,
    [
      binPath.replace(/^.*\/bin\//, `${checkout.repo}bin/`),
      'pull',
      `containers-storage:${tag}`,
      '--to',
      `oci:${out}:x`,
    ],
    { timeoutMs: 120_000 },
  );
  t.is(pulled.status, 0, pulled.stderr);
  t.is(pulled.stdout.trim(), `oci:${out}:x@${digest}`);
  t.regex(localImageProblem(parseLocalSource(`containers-storage:${tag}`)!)?.message ?? '', /root's podman storage/);
});
