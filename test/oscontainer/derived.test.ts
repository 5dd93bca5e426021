/**
 * Derived images with real podman: a base pushed to the embedded registry, a Containerfile `ARG BASE` / `FROM
 * $BASE` adding a file and removing one (a whiteout), built and pushed by podman: the base's blob is reused (same
 * digest), the labels are the base's, and a failing step is a typed error with podman's words.
 */
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { execa } from 'execa';
import { buildDerivedImage } from '../../src/oscontainer/api.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/server.js';
import { runCli } from '../helpers/cli.js';
import { skopeoInspect } from './skopeo.js';

let dir: string;
let embedded: RunningRegistry;
let base: string;
const BASE_TAG = `localhost/devpivot-test/derived-base:${process.pid}`;

test.before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'devpivot-test-derived-'));
  embedded = await startRegistry({ storage: join(dir, 'registry'), port: 0 });
  const context = join(dir, 'base');
  await execa('mkdir', ['-p', context]);
  copyFileSync('/bin/busybox', join(context, 'busybox'));
  writeFileSync(join(context, 'gone'), 'removed by the derived image\n');
  writeFileSync(
    join(context, 'Containerfile'),
    `FROM scratch\nCOPY busybox /usr/bin/busybox\nCOPY gone /usr/share/gone\nLABEL ostree.bootable=1 ostree.commit=${'b'.repeat(64)} version=5\n`,
  );
  await execa('podman', ['build', '--quiet', '--tag', BASE_TAG, context]);
  const digestFile = join(dir, 'base.digest');
  await execa('podman', [
    'push',
    '--tls-verify=false',
    '--digestfile',
    digestFile,
    BASE_TAG,
    `docker://${embedded.address}/os/base:latest`,
  ]);
  base = `${embedded.address}/os/base@${(await execa('cat', [digestFile])).stdout.trim()}`;
  const derived = join(dir, 'derived');
  await execa('mkdir', ['-p', derived]);
  writeFileSync(join(derived, 'hello'), 'hello\n');
  writeFileSync(
    join(derived, 'Containerfile'),
    'ARG BASE\nFROM $BASE\nCOPY hello /etc/hello\nRUN ["/usr/bin/busybox", "rm", "/usr/share/gone"]\n',
  );
  writeFileSync(join(derived, 'Broken'), 'ARG BASE\nFROM $BASE\nRUN ["/usr/bin/busybox", "false"]\n');
});

test.after.always(async () => {
  await embedded?.stop();
  await execa('podman', ['rmi', '--force', BASE_TAG], { reject: false });
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('podman builds FROM the pinned base and pushes: base blob reused, labels kept, one layer per step', async (t) => {
  const image = await buildDerivedImage({
    containerfile: join(dir, 'derived', 'Containerfile'),
    context: join(dir, 'derived'),
    base,
    target: `${embedded.address}/os/derived:latest`,
  });
  t.is(image.format, 'native');
  t.is(image.version, '5');
  t.is(image.commit, 'b'.repeat(64));
  const baseManifest = await skopeoInspect(base, '--raw');
  const manifest = await skopeoInspect(`${embedded.address}/os/derived@${image.digest}`, '--raw');
  t.is(manifest.layers.length, baseManifest.layers.length + 2);
  t.deepEqual(
    manifest.layers.slice(0, baseManifest.layers.length).map((l: { digest: string }) => l.digest),
    baseManifest.layers.map((l: { digest: string }) => l.digest),
  );
  // The RUN layer holds the whiteout of the removed file.
  const blob = manifest.layers.at(-1).digest;
  const response = await fetch(`http://${embedded.address}/v2/os/derived/blobs/${blob}`);
  const tar = join(dir, 'run-layer.tar.gz');
  writeFileSync(tar, Buffer.from(await response.arrayBuffer()));
  t.regex((await execa('tar', ['-tzf', tar])).stdout, /usr\/share\/\.wh\.gone/);
});

test("a failing step is DERIVED_BUILD_FAILED with podman's words; the CLI checks its options first", async (t) => {
  const error = await t.throwsAsync(
    buildDerivedImage({
      containerfile: join(dir, 'derived', 'Broken'),
      context: join(dir, 'derived'),
      base,
      target: `${embedded.address}/os/broken:latest`,
    }),
  );
  t.is((error as { code?: string }).code, 'DERIVED_BUILD_FAILED');
  t.regex(error?.message ?? '', /podman build of .*Broken failed: .*exit status 1/);
  const cli = await runCli(['build', '--containerfile', join(dir, 'derived', 'Containerfile'), '--push', 'a.b/c']);
  t.is(cli.code, 2);
  t.regex(cli.stderr, /--containerfile needs --from REF/);
  const built = await runCli([
    'build',
    '--containerfile',
    join(dir, 'derived', 'Containerfile'),
    '--from',
    base,
    '--push',
    `${embedded.address}/os/cli:latest`,
  ]);
  t.is(built.code, 0, built.stderr);
  t.regex(built.stdout.trim(), new RegExp(`^${embedded.address}/os/cli@sha256:[0-9a-f]{64}$`));
});
