/**
 * The fixture's rpm-ostree and bootc stand-ins (images/fixture/guest/), run on this host with busybox sh as the
 * guest runs them, against real ostree and skopeo and devpivot's registry on loopback. The guest's paths are moved
 * under a temporary sysroot (the only rewrite of the scripts), and as nothing is booted here, `ostree admin deploy
 * --stage` becomes a plain deploy; everything else — the bootable check, the import, the merge commit, the refs,
 * the origin, the status JSON — is what the guest runs.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { buildAndPush } from '../../src/oscontainer/index.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/server.js';
import { repoRoot } from '../helpers/cli.js';

const exec = promisify(execFile);
let dir: string;
let registry: RunningRegistry;
let native: { pinned: string; digest: string; commit: string };
let legacy: { pinned: string };
let nativeV1: { pinned: string; digest: string };
let v1: string;

const ostree = (...args: string[]) => execFileSync('ostree', args, { encoding: 'utf8' }).trim();
const sysroot = () => join(dir, 'sysroot');
const repo = () => join(sysroot(), 'ostree', 'repo');

/** A tree ostree admin can deploy (a kernel under usr/lib/modules), committed as versions 1 and 2. */
async function makeOs(): Promise<{ repo: string; v1: string; v2: string }> {
  const tree = join(dir, 'tree');
  const source = join(dir, 'source');
  await mkdir(join(tree, 'usr', 'lib', 'modules', '6.1.0-test'), { recursive: true });
  await mkdir(join(tree, 'usr', 'etc'), { recursive: true });
  await writeFile(join(tree, 'usr', 'lib', 'modules', '6.1.0-test', 'vmlinuz'), 'kernel\n');
  await writeFile(join(tree, 'usr', 'lib', 'modules', '6.1.0-test', 'initramfs.img'), 'initramfs\n');
  ostree('init', '--mode=archive', `--repo=${source}`);
  const commit = async (version: string) => {
    const release = `ID=test\nPRETTY_NAME="test ${version}"\nVERSION_ID=${version}\n`;
    await writeFile(join(tree, 'usr', 'lib', 'os-release'), release);
    await writeFile(join(tree, 'usr', 'etc', 'os-release'), release);
    return ostree(
      'commit',
      `--repo=${source}`,
      `--branch=test/v${version}`,
      `--tree=dir=${tree}`,
      `--add-metadata-string=version=${version}`,
      '--timestamp=2024-01-01T00:00:00Z',
    );
  };
  return { repo: source, v1: await commit('1'), v2: await commit('2') };
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-stand-ins-'));
  registry = await startRegistry({ storage: join(dir, 'registry'), port: 0 });
  const os = await makeOs();
  v1 = os.v1;
  native = await buildAndPush({ repo: os.repo, commit: os.v2, format: 'native', target: `${registry.address}/os:v2` });
  legacy = await buildAndPush({ repo: os.repo, commit: os.v2, target: `${registry.address}/legacy:v2` });
  nativeV1 = await buildAndPush({
    repo: os.repo,
    commit: os.v1,
    format: 'native',
    target: `${registry.address}/os:v1`,
  });
  // The node: a sysroot with v1 deployed, its origin as the fixture's boot image has one.
  await mkdir(sysroot());
  ostree('admin', 'init-fs', sysroot());
  ostree('admin', 'os-init', `--sysroot=${sysroot()}`, 'fixture');
  ostree(`--repo=${repo()}`, 'pull-local', os.repo, os.v1);
  const origin = join(dir, 'v1.origin');
  await writeFile(origin, `[origin]\nrefspec=${v1}\ncustom-url=pivot://fixture.invalid/os@sha256:${v1}\n`);
  ostree('admin', 'deploy', `--sysroot=${sysroot()}`, '--os=fixture', `--origin-file=${origin}`, v1);
  // The stand-ins, with the guest's paths under the sysroot, and a shim for what differs on this host.
  const bin = join(dir, 'bin');
  await mkdir(bin);
  await writeFile(join(dir, 'registries.conf'), `[[registry]]\nlocation = "${registry.address}"\ninsecure = true\n`);
  await writeFile(
    join(dir, 'shim.sh'),
    [
      'ostree() {',
      '  if [ "$1" = admin ]; then',
      '    sub=$2; shift 2',
      '    if [ "$sub" = deploy ]; then for a in "$@"; do shift; [ "$a" = --stage ] || set -- "$@" "$a"; done; fi',
      `    command ostree admin "$sub" --sysroot=${sysroot()} "$@"`,
      '  else command ostree "$@"; fi',
      '}',
      `skopeo() { command skopeo --registries-conf ${join(dir, 'registries.conf')} "$@"; }`,
      'systemctl() { echo "systemctl $*"; }',
      '',
    ].join('\n'),
  );
  const files = [
    'rpm-ostree',
    'bootc',
    'container-import.sh',
    'deployment-order.sh',
    'bootc-progress.sh',
    'commit-meta.sh',
  ];
  for (const name of files) {
    const text = (await readFile(join(repoRoot, 'images', 'fixture', 'guest', name), 'utf8'))
      .replace('export PATH=/usr/sbin:/usr/bin\n', `export PATH=/usr/sbin:/usr/bin:/bin; . ${join(dir, 'shim.sh')}\n`)
      .replace(/^repo=\/sysroot\/ostree\/repo$/m, `repo=${repo()}`)
      .replace(/^run=\/run\/fixture-rpm-ostree/m, `run=${join(dir, 'run')}`)
      .replace(/^locked=\/run\/ostree\//m, `locked=${join(dir, 'run')}/`)
      .replace(/^ci_tmp=.*$/m, `ci_tmp=${join(dir, 'import')}`)
      .replace(/^cm_dir=.*$/m, `cm_dir=${join(dir, 'commit-meta')}`)
      .replaceAll('/ostree/deploy/', `${sysroot()}/ostree/deploy/`)
      .replace('/usr/lib/fixture/container-import.sh', join(bin, 'container-import.sh'))
      .replace('/usr/lib/fixture/deployment-order.sh', join(bin, 'deployment-order.sh'))
      .replace('/usr/lib/fixture/bootc-progress.sh', join(bin, 'bootc-progress.sh'))
      .replace('/usr/lib/fixture/commit-meta.sh', join(bin, 'commit-meta.sh'));
    await writeFile(join(bin, name), text);
    await chmod(join(bin, name), 0o755);
  }
});

test.after.always(async () => {
  await registry?.stop();
  if (!dir) return;
  // ostree makes deployment roots immutable
  const deploy = join(sysroot(), 'ostree', 'deploy', 'fixture', 'deploy');
  for (const entry of await readdir(deploy).catch(() => [] as string[]))
    await exec('chattr', ['-i', join(deploy, entry)]).catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

async function standIn(name: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec('busybox', ['sh', join(dir, 'bin', name), ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const merge = () =>
  ostree(`--repo=${repo()}`, 'refs')
    .split('\n')
    .find((ref) => ref.startsWith('ostree/container/image/'));

test.serial('rpm-ostree refuses an image without the bootable label, with ostree-ext message', async (t) => {
  const run = await standIn('rpm-ostree', 'rebase', '--experimental', `ostree-unverified-registry:${legacy.pinned}`);
  t.is(run.code, 1);
  t.is(run.stdout, `Pulling manifest: ostree-unverified-registry:${legacy.pinned}\n`);
  t.is(run.stderr, 'error: Preparing import: Target image does not have ostree.bootable label\n');
  t.is(merge(), undefined, 'nothing imported');
});

test.serial('rpm-ostree rebase imports the native image, writes the merge commit and deploys it', async (t) => {
  const imgref = `ostree-unverified-registry:${native.pinned}`;
  const run = await standIn('rpm-ostree', 'rebase', '--experimental', imgref);
  t.is(run.code, 0, run.stderr);
  const lines = run.stdout.trim().split('\n');
  t.deepEqual(lines.slice(0, 2), [`Pulling manifest: ${imgref}`, `Importing: ${imgref} (digest: ${native.digest})`]);
  t.regex(lines[2]!, /^ostree chunk layers needed: 1 \(\d+(\.\d)? (bytes|kB|MB)\)$/);
  // rust/src/sysroot_upgrade.rs layer_progress_print: one task per layer fetched, 19 hex digits, glib's size.
  t.regex(lines[3]!, /^\[1\/1\] Fetching ostree chunk [0-9a-f]{19} \(\d+(\.\d)? (bytes|kB|MB)\)\.\.\.done$/);
  t.deepEqual(lines.slice(4), [
    'Staging deployment...done',
    'Changes queued for next boot. Run "systemctl reboot" to start a reboot',
  ]);
  // The merge commit: the image's commit as parent and tree, ostree-ext's metadata.
  const ref = merge()!;
  t.is(
    ref,
    `ostree/container/image/docker_3A__2F__2F_127_2E_0_2E_0_2E_1_3A_${registry.port}/os_40_sha256_3A_${native.digest.slice(7)}`,
  );
  const mergeCommit = ostree(`--repo=${repo()}`, 'rev-parse', ref);
  t.not(mergeCommit, native.commit);
  t.is(ostree(`--repo=${repo()}`, 'rev-parse', `${mergeCommit}^`), native.commit);
  const meta = (key: string) => ostree(`--repo=${repo()}`, 'show', `--print-metadata-key=${key}`, mergeCommit);
  t.is(meta('ostree.manifest-digest'), `'${native.digest}'`);
  t.regex(meta('ostree.container.image-config'), /"ostree\.bootable":"true"/);
  t.is(
    ostree(`--repo=${repo()}`, 'ls', '-R', mergeCommit),
    ostree(`--repo=${repo()}`, 'ls', '-R', native.commit),
    'the same tree',
  );
  t.regex(ostree(`--repo=${repo()}`, 'fsck'), /no errors found/);
  // status --json: the new default deployment by its image, and the old one by its pivot:// origin.
  const printed = (await standIn('rpm-ostree', 'status', '--json')).stdout;
  // json-glib's pretty generator (GNOME/json-glib 0be776dd json-generator.c:297-308): two spaces, `"key" : value`
  t.true(printed.startsWith('{\n  "deployments" : [\n    {\n      "id" : "fixture-'), printed.slice(0, 80));
  t.true(printed.endsWith('\n  "update-driver" : null\n}\n'));
  // byte for byte what json-glib itself prints for the same document (json-glib-format -p, json-glib-tools)
  await writeFile(join(dir, 'status.json'), printed);
  const glib = execFileSync('json-glib-format', ['--prettify', join(dir, 'status.json')], { encoding: 'utf8' });
  t.is(printed, glib, 'json-glib pretty layout');
  // the per-commit cache (commit-meta.sh) changes no byte: warm, and cold again
  t.true((await readdir(join(dir, 'commit-meta'))).includes(mergeCommit), 'the merge commit is cached');
  t.is((await standIn('rpm-ostree', 'status', '--json')).stdout, printed, 'from the cache');
  await rm(join(dir, 'commit-meta'), { recursive: true });
  t.is((await standIn('rpm-ostree', 'status', '--json')).stdout, printed, 'read anew');
  const status = JSON.parse(printed) as { deployments: Record<string, unknown>[] };
  // a container deployment has no "origin" (rpmostreed-deployment-utils.cxx:216-244) and has "timestamp"
  t.false('origin' in status.deployments[0]!);
  t.is(typeof status.deployments[0]!.timestamp, 'number');
  t.is(status.deployments[1]!.origin, v1, 'a checksum origin is "origin"');
  t.like(status.deployments[0], {
    checksum: mergeCommit,
    version: '2',
    'container-image-reference': imgref,
    'container-image-reference-digest': native.digest,
  });
  const host = JSON.parse((await standIn('bootc', 'status', '--json')).stdout) as {
    status: { otherDeployments: { image: unknown; ostree: { checksum: string } }[] };
  };
  t.like(host.status.otherDeployments[1], { image: null, ostree: { checksum: v1 } }, 'a pivot:// deployment: no image');
  t.like(status.deployments[1], {
    checksum: v1,
    version: '1',
    'custom-origin': [`pivot://fixture.invalid/os@sha256:${v1}`, ''],
  });
});

test.serial(
  'rpm-ostree rebase to the reference the default deployment already has: refused before any pull',
  async (t) => {
    // coreos/rpm-ostree d5ef5f0c src/daemon/rpmostreed-transaction-types.cxx:89-91: a container refspec equal to the
    // origin merge deployment's (the first one, rpmostree-sysroot-core.cxx:250) is "Old and new refs are equal: %s";
    // the client prints `error: ` and that message and exits 1 (as in an MCD log: OCPBUGS-56279).
    const imgref = `ostree-unverified-registry:${native.pinned}`;
    const before = ostree('admin', 'status', `--sysroot=${sysroot()}`);
    const run = await standIn('rpm-ostree', 'rebase', '--experimental', imgref);
    t.is(run.code, 1);
    t.is(run.stdout, '', 'nothing pulled, nothing staged');
    t.is(run.stderr, `error: Old and new refs are equal: ${imgref}\n`);
    t.is(ostree('admin', 'status', `--sysroot=${sysroot()}`), before);
    // another reference to the same image is a different ref: not refused
    const tagged = await standIn('rpm-ostree', 'rebase', `ostree-unverified-registry:${registry.address}/os:v2`);
    t.is(tagged.code, 0, tagged.stderr);
    const back = await standIn('rpm-ostree', 'rebase', imgref);
    t.is(back.code, 0, back.stderr);
  },
);

test.serial('bootc switch to the same image again: already imported, the same merge commit', async (t) => {
  const before = ostree(`--repo=${repo()}`, 'rev-parse', merge()!);
  const run = await standIn('bootc', 'switch', '--transport', 'registry', native.pinned);
  t.is(run.code, 0, run.stderr);
  t.deepEqual(run.stdout.trim().split('\n'), [
    `No changes in ${native.pinned} => ${native.digest}`,
    `Queued for next boot: ${native.pinned}`,
    '  Version: 2',
    `  Digest: ${native.digest}`,
  ]);
  t.is(ostree(`--repo=${repo()}`, 'rev-parse', merge()!), before);
  const printed = (await standIn('bootc', 'status', '--json')).stdout;
  // RFC 8785 canonical JSON (bootc-dev/bootc 534c76ea crates/lib/src/status.rs:512): sorted keys, no whitespace, as
  // the key order of crates/lib/src/spec.rs Host, HostStatus and BootEntry sorted gives
  const canonical = (value: unknown): string =>
    Array.isArray(value)
      ? `[${value.map(canonical).join(',')}]`
      : value !== null && typeof value === 'object'
        ? `{${Object.keys(value)
            .sort()
            .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
            .join(',')}}`
        : JSON.stringify(value);
  t.is(printed, canonical(JSON.parse(printed)));
  t.true(printed.startsWith('{"apiVersion":"org.containers.bootc/v1","kind":"BootcHost","metadata":{"name":"host"},'));
  const parsed = JSON.parse(printed) as { status: Record<string, unknown> & { otherDeployments: object[] } };
  t.deepEqual(Object.keys(parsed.status), [
    'booted',
    'otherDeployments',
    'readOnly',
    'rollback',
    'rollbackQueued',
    'staged',
    'type',
    'usrOverlay',
  ]);
  t.deepEqual(Object.keys(parsed.status.otherDeployments[0]!), [
    'cachedUpdate',
    'composefs',
    'downloadOnly',
    'image',
    'incompatible',
    'ostree',
    'pinned',
    'softRebootCapable',
    'store',
  ]);
  const entries = [
    parsed.status.staged,
    parsed.status.booted,
    parsed.status.rollback,
    ...parsed.status.otherDeployments,
  ];
  for (const entry of entries.filter((e) => e !== null))
    t.like(entry, { store: 'ostreeContainer', composefs: null }, 'on every entry (status.rs:272-287)');
  const host = JSON.parse(printed) as {
    kind: string;
    status: { otherDeployments: { image: { image: { image: string }; imageDigest: string } | null }[] };
  };
  t.is(host.kind, 'BootcHost');
  t.like(host.status.otherDeployments[0], { image: { image: { image: native.pinned }, imageDigest: native.digest } });
  const refused = await standIn('bootc', 'switch', legacy.pinned);
  t.is(
    refused.stderr,
    'error: Switching (ostree): Preparing import: Target image does not have ostree.bootable label\n',
  );
});

test.serial(
  'rpm-ostree --version is the YAML document the MCD reads (Features lists container); cleanup -p',
  async (t) => {
    const version = await standIn('rpm-ostree', '--version');
    t.is(version.code, 0, version.stderr);
    t.regex(version.stdout, /^rpm-ostree:\n Version: '[\d.]+'\n Git: \S+\n Features:\n( {2}- [a-z-]+\n)+$/);
    t.true(version.stdout.split('\n').includes('  - container'));
    const cleanup = await standIn('rpm-ostree', 'cleanup', '-p');
    t.is(cleanup.code, 0, cleanup.stderr);
    t.is(
      cleanup.stdout,
      'Deployments unchanged.\n',
      'nothing is staged on this host (deploy --stage is a deploy here)',
    );
    t.is((await standIn('rpm-ostree', 'cleanup', '-r')).code, 1);
  },
);

/** The stand-in run with `--progress-fd 3` on a FIFO, as the bootc driver's unit runs it: its JSON lines. */
async function withProgress(...args: string[]): Promise<{ code: number; stderr: string; lines: string[] }> {
  const fifo = join(dir, 'progress.fifo');
  const out = join(dir, 'progress.out');
  await rm(fifo, { force: true });
  const script = `mkfifo "$1" && { cat "$1" >"$2" & } && busybox sh "$3" "$4" --progress-fd 3 "$5" 3>"$1"; rc=$?; wait; exit $rc`;
  const run = await exec('sh', ['-c', script, 'sh', fifo, out, join(dir, 'bin', 'bootc'), ...args]).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
  return { ...run, lines: (await readFile(out, 'utf8')).split('\n').filter((line) => line !== '') };
}

/** RFC 8785 key order (canon_json, as bootc serializes): every object's keys sorted. */
const canonical = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(canonical)
    : value && typeof value === 'object'
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
        )
      : value;

test.serial(
  'bootc switch --progress-fd writes the JSON Lines of progress_jsonl.rs: pulling, importing, staging',
  async (t) => {
    // Not execFileSync: the registry answers from this process.
    const raw = await exec('skopeo', ['inspect', '--raw', '--tls-verify=false', `docker://${nativeV1.pinned}`]);
    const manifest = JSON.parse(raw.stdout) as { layers: { digest: string; size: number }[] };
    const [layer] = manifest.layers;
    const run = await withProgress('switch', nativeV1.pinned);
    t.is(run.code, 0, run.stderr);
    for (const line of run.lines) t.is(line, JSON.stringify(canonical(JSON.parse(line))), 'keys sorted, no whitespace');
    const d = nativeV1.digest;
    const short = layer!.digest.slice(7, 28);
    const subtask = (bytes: number) =>
      `{"bytes":${bytes},"bytesCached":0,"bytesTotal":${layer!.size},"description":"ostree chunk: ${short}","id":"${short}","subtask":"ostree chunk"}`;
    const pulling = (bytes: number, steps: number, sub: number) =>
      `{"bytes":${bytes},"bytesCached":0,"bytesTotal":${layer!.size},"description":"Pulling Image: ${d}","id":"${d}","steps":${steps},"stepsCached":0,"stepsTotal":1,"subtasks":[${subtask(sub)}],"task":"pulling","type":"ProgressBytes"}`;
    const step = (name: string, id: string, description: string, completed: boolean) =>
      `{"completed":${completed},"description":"${description}","id":"${id}","subtask":"${name}"}`;
    const importing = (steps: number) =>
      `{"description":"Importing Image","id":"${d}","steps":${steps},"stepsCached":0,"stepsTotal":1,"subtasks":[${step('importing', 'importing', 'Importing Image', steps === 1)}],"task":"importing","type":"ProgressSteps"}`;
    const subs = [
      ['merging', 'fetching', 'Merging Image'],
      ['deploying', 'deploying', 'Deploying Image'],
      ['bound_images', 'bound_images', 'Pulling Bound Images'],
      ['cleanup', 'cleanup', 'Removing old images'],
    ] as const;
    const staging = (steps: number, done: number) => {
      const list = subs.slice(0, Math.min(done + 1, 4)).map(([n, i, desc], k) => step(n, i, desc, k < done));
      if (done === 4) list.push(step('cleanup', 'cleanup', 'Removing old images', true));
      return `{"description":"Deploying Image","id":"${d}","steps":${steps},"stepsCached":0,"stepsTotal":3,"subtasks":[${list.join(',')}],"task":"staging","type":"ProgressSteps"}`;
    };
    t.is(run.lines[0], '{"type":"Start","version":"0.1.0"}');
    const done = run.lines.indexOf(pulling(layer!.size, 1, layer!.size));
    t.true(done > 0, 'the layer fetched: a required event with bytes == total');
    // Lossy updates between Start and it: the bytes that arrived, never more than the layer.
    for (const line of run.lines.slice(1, done)) {
      const event = JSON.parse(line) as { bytes: number; steps: number; subtasks: { bytes: number }[] };
      t.is(line, pulling(event.bytes, 0, event.subtasks[0]!.bytes));
      t.true(event.bytes <= layer!.size);
    }
    t.deepEqual(run.lines.slice(done + 1), [
      importing(0),
      importing(1),
      staging(0, 0),
      staging(1, 1),
      staging(1, 2),
      staging(2, 3),
      staging(3, 4),
    ]);
    // Again (this host deploys instead of staging, so the spec does not name it yet): already imported, "No
    // changes in" (prepare_for_pull AlreadyPresent), so no pull and no import events, only the staging.
    const again = await withProgress('switch', nativeV1.pinned);
    t.is(again.code, 0, again.stderr);
    t.deepEqual(again.lines, [
      '{"type":"Start","version":"0.1.0"}',
      staging(0, 0),
      staging(1, 1),
      staging(1, 2),
      staging(2, 3),
      staging(3, 4),
    ]);
  },
);

test.serial('bootc --progress-fd refuses fds 0-2 (clap, exit 2) and a fd that is not a pipe', async (t) => {
  const low = await standIn('bootc', 'switch', '--progress-fd', '1', nativeV1.pinned);
  t.is(low.code, 2);
  t.regex(
    low.stderr,
    /^error: invalid value '1' for '--progress-fd <PROGRESS_FD>': Cannot use fd 1 for progress JSON\n/,
  );
  const file = await exec('sh', [
    '-c',
    `busybox sh "$0" switch --progress-fd 3 x 3>"$1"`,
    join(dir, 'bin', 'bootc'),
    join(dir, 'f'),
  ]).catch((e: { code: number; stderr: string }) => e);
  t.is((file as { code: number }).code, 1);
  t.is((file as { stderr: string }).stderr, 'error: Switching (ostree): not a pipe\n');
});

// Last: it stops the registry.
test.serial(
  'a digest pullspec already imported needs no registry (ostree-ext AlreadyPresent); a tag does',
  async (t) => {
    const imgref = `ostree-unverified-registry:${native.pinned}`;
    const tagged = `ostree-unverified-registry:${registry.address}/os:v2`;
    t.is((await standIn('rpm-ostree', 'rebase', tagged)).code, 0);
    await registry.stop();
    // bootc-dev/bootc 534c76ea crates/ostree-ext/src/container/store.rs:958-975: no manifest fetch for a digest
    // already present; rpm-ostree d5ef5f0c rust/src/sysroot_upgrade.rs:130-134 prints only "Pulling manifest".
    const run = await standIn('rpm-ostree', 'rebase', imgref);
    t.is(run.code, 0, run.stderr);
    t.deepEqual(run.stdout.trim().split('\n'), [
      `Pulling manifest: ${imgref}`,
      'Staging deployment...done',
      'Changes queued for next boot. Run "systemctl reboot" to start a reboot',
    ]);
    const again = await standIn('rpm-ostree', 'rebase', tagged);
    t.is(again.code, 1, 'a tag must be resolved by the registry');
    t.regex(again.stderr, /^error: .*Fetching manifest: /);
  },
);
