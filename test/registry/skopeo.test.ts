/** Real skopeo against the registry: round trips through OCI layouts and dir:, index copies, digests preserved. */
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import {
  digestOf,
  makeImage,
  makeIndex,
  run,
  startTestRegistry,
  type TestRegistry,
  tempDir,
  writeOciLayout,
} from './helpers.js';

let r: TestRegistry;
let work: string;
/** skopeo-secure.test.ts runs every test of this file again against the registry with TLS and auth on. */
const secure = process.env.DEVPIVOT_SKOPEO_SECURE === '1';
test.before(async () => {
  r = await startTestRegistry({ secure });
  work = await tempDir('devpivot-registry-skopeo-');
});
test.after.always(async () => {
  await r?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

// Placeholders for how skopeo is told to reach the registry: plain HTTP (TLS verification off), or with TLS and auth
// on, the CA (--cert-dir) and the pull secret (--authfile) for the destination, the source, or both.
const NO_TLS_DEST = '<dest>';
const NO_TLS_SRC = '<src>';
const NO_TLS = '<any>';

function expand(args: string[]): string[] {
  return args.flatMap((arg) => {
    const side = { '<dest>': 'dest-', '<src>': 'src-', '<any>': '' }[arg];
    if (side === undefined) return [arg];
    if (!r.secure) return [`--${side}tls-verify=false`];
    return [`--${side}cert-dir`, r.secure.certDir, `--${side}authfile`, r.secure.authFile];
  });
}

async function skopeo(...args: string[]) {
  const result = await run('skopeo', ['--insecure-policy', ...expand(args)], 120_000);
  if (result.code !== 0) throw new Error(`skopeo ${args.join(' ')}: ${result.stderr}`);
  return result;
}

function uploadRequests(from: number): number {
  return r.events
    .slice(from)
    .filter((e) => e.kind === 'registry.request' && /\/blobs\/uploads\//.test(e.path) && e.method !== 'GET').length;
}

test.serial('multi-layer OCI layout -> registry -> dir:, digests preserved; re-push uploads nothing', async (t) => {
  const image = makeImage([200_000, 50_000, 1_000_000]);
  const layout = join(work, 'layout-single');
  await writeOciLayout(layout, image.manifest, [image.config, ...image.layers], 'v1');
  const ref = `docker://${r.host}/skopeo/single:v1`;
  const start = r.events.length;
  await skopeo('copy', NO_TLS_DEST, `oci:${layout}:v1`, ref);
  t.true(uploadRequests(start) >= 4, 'the first push uploads config and layers');

  const inspect = await skopeo('inspect', '--raw', NO_TLS, ref);
  t.is(digestOf(inspect.stdout), image.manifest.digest);
  const out = join(work, 'dir-single');
  await skopeo('copy', NO_TLS_SRC, ref, `dir:${out}`);
  const manifest = await readFile(join(out, 'manifest.json'));
  t.is(digestOf(manifest), image.manifest.digest);
  for (const b of [image.config, ...image.layers]) {
    const bytes = await readFile(join(out, b.digest.slice(7)));
    t.is(digestOf(bytes), b.digest);
  }

  // Copy by digest.
  const byDigest = join(work, 'dir-by-digest');
  await skopeo('copy', NO_TLS_SRC, `docker://${r.host}/skopeo/single@${image.manifest.digest}`, `dir:${byDigest}`);
  t.is(digestOf(await readFile(join(byDigest, 'manifest.json'))), image.manifest.digest);

  // Re-push: every blob is already there, so no upload session is opened.
  const before = r.events.length;
  await skopeo('copy', NO_TLS_DEST, `oci:${layout}:v1`, ref);
  t.is(uploadRequests(before), 0);
});

test.serial('a 2-platform index with copy --all; one platform by --override-arch', async (t) => {
  const amd = makeImage([100_000], { arch: 'amd64' });
  const arm = makeImage([120_000], { arch: 'arm64' });
  const index = makeIndex([
    { image: amd, arch: 'amd64' },
    { image: arm, arch: 'arm64' },
  ]);
  const layout = join(work, 'layout-index');
  const blobs = [amd, arm].flatMap((image) => [image.manifest, image.config, ...image.layers]);
  await writeOciLayout(layout, index, blobs, 'multi');
  const ref = `docker://${r.host}/skopeo/multi:latest`;
  await skopeo('copy', '--all', NO_TLS_DEST, `oci:${layout}:multi`, ref);
  const raw = await skopeo('inspect', '--raw', NO_TLS, ref);
  t.is(digestOf(raw.stdout), index.digest);

  const out = join(work, 'layout-index-back');
  await skopeo('copy', '--all', NO_TLS_SRC, ref, `oci:${out}:back`);
  const names = await readdir(join(out, 'blobs', 'sha256'));
  for (const b of [index, ...blobs]) t.true(names.includes(b.digest.slice(7)), b.digest);

  const armDir = join(work, 'dir-arm');
  await skopeo('copy', '--override-arch', 'arm64', NO_TLS_SRC, ref, `dir:${armDir}`);
  t.is(digestOf(await readFile(join(armDir, 'manifest.json'))), arm.manifest.digest);
});

test.serial('skopeo delete removes the manifest', async (t) => {
  const image = makeImage([1000]);
  const layout = join(work, 'layout-delete');
  await writeOciLayout(layout, image.manifest, [image.config, ...image.layers], 'gone');
  const ref = `docker://${r.host}/skopeo/delete:gone`;
  await skopeo('copy', NO_TLS_DEST, `oci:${layout}:gone`, ref);
  await skopeo('delete', NO_TLS, `docker://${r.host}/skopeo/delete@${image.manifest.digest}`);
  const inspect = await run('skopeo', expand(['inspect', '--raw', NO_TLS, ref]));
  t.not(inspect.code, 0);
});
