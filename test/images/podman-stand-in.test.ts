/**
 * The fixture's podman stand-in (images/fixture/guest/podman) against the real podman on this host (Debian's 4.3.1),
 * the oracle: both run the commands openshift/pivot (e31a72d cmd/root.go) and the machine-config daemon (MCO
 * a57ca291 pkg/daemon/update.go podmanCopy, the firstboot units) run, against one image in devpivot's registry on
 * loopback, each with a storage of its own; stdout, stderr and exit codes must agree, with only container IDs and
 * mount paths (random) normalised. A podman release that prints otherwise, or a stand-in change that drifts, fails.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { type RunningRegistry, startRegistry } from '../../src/registry/server.js';
import { repoRoot } from '../helpers/cli.js';

const exec = promisify(execFile);
let dir: string;
let registry: RunningRegistry;
let ref: string;
let imageId: string;
let manifestDigest: string;
let tagRef: string;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<Result> {
  return exec(file, args, { env, maxBuffer: 16 << 20 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

/** The real podman's storage of its own (vfs: no overlay mounts). */
const realStorage = () => [
  '--root',
  join(dir, 'real', 'root'),
  '--runroot',
  join(dir, 'real', 'run'),
  '--storage-driver',
  'vfs',
];

/** The real podman, with its own storage and the registry marked insecure. */
const real = (args: string[], registriesConf = join(dir, 'registries.conf')) =>
  run('podman', [...realStorage(), '--cgroup-manager', 'cgroupfs', '--events-backend', 'none', ...args], {
    ...process.env,
    CONTAINERS_REGISTRIES_CONF: registriesConf,
  });

/** The stand-in as the guest runs it (busybox sh), its store and skopeo's registries.conf moved under `dir`. */
const standIn = (args: string[], registriesConf = join(dir, 'registries.conf')) =>
  run('busybox', ['sh', join(dir, 'podman'), ...args], { ...process.env, REGISTRIES_CONF: registriesConf });

/** Random parts out: container IDs (64 hex that are not the image's) and the stand-in's or podman's store paths. */
function normalise(text: string): string {
  return text
    .replace(/\b[0-9a-f]{64}\b/g, (hex) => (hex === imageId || hex === manifestDigest ? hex : '<cid>'))
    .replace(/^\/\S+$/gm, '<path>');
}

async function both(args: string[], registriesConf?: string): Promise<{ real: Result; standIn: Result }> {
  const [r, s] = [await real(args, registriesConf), await standIn(args, registriesConf)];
  return {
    real: { code: r.code, stdout: normalise(r.stdout), stderr: normalise(r.stderr) },
    standIn: { code: s.code, stdout: normalise(s.stdout), stderr: normalise(s.stderr) },
  };
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** A legacy-shaped oscontainer (a /srv/repo file, the two pivot labels), pushed by skopeo from a dir: image. */
async function pushImage(): Promise<void> {
  const rootfs = join(dir, 'rootfs');
  await mkdir(join(rootfs, 'srv', 'repo'), { recursive: true });
  await writeFile(join(rootfs, 'srv', 'repo', 'config'), '[core]\nmode=archive-z2\n');
  const image = join(dir, 'image');
  await mkdir(image);
  await exec('tar', [
    '--sort=name',
    '--mtime=@0',
    '--owner=0',
    '--group=0',
    '-C',
    rootfs,
    '-cf',
    join(dir, 'layer.tar'),
    '.',
  ]);
  const tar = await readFile(join(dir, 'layer.tar'));
  const { stdout: gz } = await exec('sh', ['-c', `gzip -n -c ${join(dir, 'layer.tar')} | base64 -w0`]);
  const layer = Buffer.from(gz, 'base64');
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: {
        Labels: { 'com.coreos.ostree-commit': 'c'.repeat(64), version: '2' },
        Entrypoint: ['/noentry'],
      },
      rootfs: { type: 'layers', diff_ids: [`sha256:${sha256(tar)}`] },
      history: [{ created_by: 'devpivot podman oracle test' }],
    }),
  );
  imageId = sha256(config);
  await writeFile(join(image, sha256(layer)), layer);
  await writeFile(join(image, imageId), config);
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
    config: {
      mediaType: 'application/vnd.docker.container.image.v1+json',
      size: config.length,
      digest: `sha256:${imageId}`,
    },
    layers: [
      {
        mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
        size: layer.length,
        digest: `sha256:${sha256(layer)}`,
      },
    ],
  });
  manifestDigest = sha256(manifest);
  await writeFile(join(image, 'manifest.json'), manifest);
  await writeFile(join(image, 'version'), 'Directory Transport Version: 1.1\n');
  tagRef = `${registry.address}/devpivot/oracle:v2`;
  await exec('skopeo', ['copy', '--quiet', '--dest-tls-verify=false', `dir:${image}`, `docker://${tagRef}`]);
  ref = `${registry.address}/devpivot/oracle@sha256:${manifestDigest}`;
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-podman-oracle-'));
  registry = await startRegistry({ storage: join(dir, 'registry'), port: 0 });
  await pushImage();
  await writeFile(join(dir, 'registries.conf'), `[[registry]]\nlocation = "${registry.address}"\ninsecure = true\n`);
  await mkdir(join(dir, 'shims'));
  await writeFile(
    join(dir, 'shims', 'skopeo'),
    `#!/bin/sh\nexec /usr/bin/skopeo --registries-conf "$REGISTRIES_CONF" "$@"\n`,
  );
  await chmod(join(dir, 'shims', 'skopeo'), 0o755);
  const script = (await readFile(join(repoRoot, 'images', 'fixture', 'guest', 'podman'), 'utf8'))
    .replace('export PATH=/usr/sbin:/usr/bin', `export PATH=${join(dir, 'shims')}:/usr/sbin:/usr/bin:/sbin:/bin`)
    .replace('store=/var/lib/containers/fixture-storage', `store=${join(dir, 'store')}`);
  await writeFile(join(dir, 'podman'), script);
  await writeFile(join(dir, 'auth.json'), '{}\n');
});

test.after.always(async () => {
  await registry?.stop();
  await exec('podman', [...realStorage(), 'system', 'reset', '--force']).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

test.serial('what pivot and the MCD run: the same lines, streams and exit codes as podman 4.3', async (t) => {
  const steps: string[][] = [
    // the MCD's pull unit: `podman pull --authfile=/var/lib/kubelet/config.json IMAGE`, progress on stderr
    ['pull', `--authfile=${join(dir, 'auth.json')}`, ref],
    // pivot's and the MCD's legacy pull: `podman pull -q [--authfile F] IMAGE`, the image ID alone
    ['pull', '-q', '--authfile', join(dir, 'auth.json'), ref],
    ['pull', '-q', ref],
    // podmanRemove of the old fixed name: kill refused (no such container), rm -f silent and 0
    ['kill', 'ostree-container-pivot'],
    ['rm', '-f', 'ostree-container-pivot'],
    [
      'create',
      '--net=none',
      '--annotation=org.openshift.machineconfigoperator.pivot=true',
      '--name',
      'ostree-container-pivot-1',
      ref,
    ],
    ['create', '--net=none', '--name', 'ostree-container-pivot-1', ref],
    ['mount', 'ostree-container-pivot-1'],
    // the deferred podmanRemove of a created, never started container
    ['kill', 'ostree-container-pivot-1'],
    ['rm', '-f', 'ostree-container-pivot-1'],
    ['rm', '-f', 'ostree-container-pivot-1'],
    ['rm', 'ostree-container-pivot-1'],
    ['inspect', '--type=image', 'devpivot/nosuch'],
    // pivot's `podman rmi IMGID`: a digest pullspec, or "" when nothing was pulled
    ['rmi', ''],
    ['rmi', ref],
    ['rmi', ref],
    ['pull', '-q', '--authfile', join(dir, 'absent.json'), ref],
    ['pull', '-q', `${registry.address}/devpivot/oracle@sha256:${'1'.repeat(64)}`],
    ['pull', '--frob', ref],
    ['frob'],
  ];
  for (const args of steps) {
    const { real: r, standIn: s } = await both(args);
    t.deepEqual(s, r, `podman ${args.join(' ')}`);
  }
});

test.serial('a plain-HTTP registry not marked insecure: the same refusal, word for word', async (t) => {
  await writeFile(join(dir, 'empty.conf'), '');
  const { real: r, standIn: s } = await both(['pull', '-q', ref], join(dir, 'empty.conf'));
  t.regex(
    r.stderr,
    /^Error: initializing source docker:\/\/\S+: pinging container registry \S+: Get "https:\/\/\S+\/v2\/": http: server gave HTTP response to HTTPS client\n$/,
  );
  t.deepEqual(s, r);
});

test.serial(
  'inspect: the keys the stand-in prints in podman 4.3 order and indentation, the values pivot reads equal',
  async (t) => {
    await both(['pull', '-q', tagRef]);
    for (const name of [ref, tagRef]) {
      const r = await real(['inspect', '--type=image', name]);
      const s = await standIn(['inspect', '--type=image', name]);
      t.is(s.code, 0, s.stderr);
      const [realImage] = JSON.parse(r.stdout) as Record<string, unknown>[];
      const [standInImage] = JSON.parse(s.stdout) as Record<string, unknown>[];
      const keys = Object.keys(standInImage!);
      t.deepEqual(
        keys,
        Object.keys(realImage!).filter((key) => keys.includes(key)),
        'a subset, in podman order',
      );
      for (const key of ['Id', 'Digest', 'RepoDigests', 'Labels', 'Architecture', 'Os'])
        t.deepEqual(standInImage![key], realImage![key], `${name} ${key}`);
      t.deepEqual(
        (standInImage!.Config as { Labels: unknown }).Labels,
        (realImage!.Config as { Labels: unknown }).Labels,
      );
      // json.MarshalIndent with five spaces, as podman prints it
      t.is(s.stdout.split('\n').slice(0, 3).join('\n'), r.stdout.split('\n').slice(0, 3).join('\n'));
    }
    const r = await real(['inspect', '--type=image', tagRef]);
    const s = await standIn(['inspect', '--type=image', tagRef]);
    t.deepEqual(
      (JSON.parse(s.stdout) as { RepoTags: string[] }[])[0]!.RepoTags,
      (JSON.parse(r.stdout) as { RepoTags: string[] }[])[0]!.RepoTags,
    );
  },
);

test.serial('mount: the image layers extracted where the printed path says', async (t) => {
  await standIn(['pull', '-q', ref]);
  const cid = (await standIn(['create', '--net=none', '--name', 'm', ref])).stdout.trim();
  const mnt = (await standIn(['mount', cid])).stdout.trim();
  t.true((await stat(join(mnt, 'srv', 'repo', 'config'))).isFile());
  t.is((await standIn(['mount', 'm'])).stdout.trim(), mnt, 'by name or ID, the same directory');
});
