/**
 * The fixture's openshift/pivot stand-in (images/fixture/guest/pivot), run on this host with busybox sh and real jq,
 * against shims for the tools it calls (rpm-ostree, podman, ostree, systemctl, sleep: each records its arguments).
 * The guest's paths are moved under a temporary directory: the only rewrites of the script. The cases are upstream's
 * own fixtures, openshift/pivot e31a72d cmd/root_test.go (TestCompareOSImageURL's references, TestParseTuningFile's
 * /proc/cmdline and tuning file), and the two outcomes of a first run on a deployment without a `pivot://` origin
 * (compareOSImageURL("", …) fatal at root.go:284; RHCOS 4.1/4.2 boot images came "prepivoted", MCO c63310a6).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { repoRoot } from '../helpers/cli.js';

const exec = promisify(execFile);
// cmd/root_test.go TestCompareOSImageURL: A and B share a digest, C does not.
const REF_A = 'registry.example.com/foo/bar@sha256:0743a3cc3bcf3b4aabb814500c2739f84cb085ff4e7ec7996aef7977c4c19c7f';
const REF_B = 'registry.example.com/foo/baz@sha256:0743a3cc3bcf3b4aabb814500c2739f84cb085ff4e7ec7996aef7977c4c19c7f';
const REF_C = 'registry.example.com/foo/bar@sha256:2a76681fd15bfc06fa4aa0ff6913ba17527e075417fc92ea29f6bcc2afca24ff';
// cmd/root_test.go TestParseTuningFile
const CMDLINE =
  'BOOT_IMAGE=/a/vmlinuz.x86_64 resume=/dev/mapper/swap rhgb quiet root=/a/b/c/root ostree=/ostree/boot.0/a/0';
const CMDLINE_NOSMT =
  'BOOT_IMAGE=/a/vmlinuz.x86_64 nosmt resume=/dev/mapper/swap rhgb quiet root=/a/b/c/root ostree=/ostree/boot.0/a/0';
const TUNING = 'ADD nosmt\nADD aaaa\nDELETE nosmt\nDELETE nope';
const CSUM = 'c'.repeat(64);

const SHIMS: Record<string, string> = {
  'rpm-ostree': `echo "rpm-ostree $*" >>"$T/calls"
case "$1" in status) cat "$T/status.json" ;; rebase) echo 'Staging deployment...done' ;; esac`,
  podman: `echo "podman $*" >>"$T/calls"
case "$1" in
  pull) [ -e "$T/pull-fails" ] && { echo 'Error: initializing source docker://x: connection refused' >&2; exit 125; }; echo "${'e'.repeat(64)}" ;;
  inspect) cat "$T/inspect.json" ;;
  create) echo "${'d'.repeat(64)}" ;;
  mount) echo "$T/mnt" ;;
  kill) echo 'Error: no container with name or ID "x" found: no such container' >&2; exit 125 ;;
  rmi) [ -n "$2" ] || { echo 'Error: repository name must have at least one component' >&2; exit 125; } ;;
esac`,
  ostree: `echo "ostree $*" >>"$T/calls"
case "$1" in refs) cat "$T/refs" ;; rev-parse) [ -n "$4" ] || { echo 'error: Invalid empty ref' >&2; exit 1; }; echo ${'f'.repeat(64)} ;; esac`,
  systemctl: 'echo "systemctl $*" >>"$T/calls"',
  sleep: 'echo "sleep $*" >>"$T/calls"',
};

interface Case {
  /** the default deployment's custom origin; none: an origin without one (refspec only) */
  customOrigin?: string;
  pullspec: string;
  args?: string[];
  labels?: Record<string, string>;
  repoDigest?: string;
  tuning?: string;
  cmdline?: string;
  rebootNeeded?: boolean;
  pullFails?: boolean;
  refs?: string;
}

async function runCase(c: Case) {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-pivot-'));
  const shims = join(dir, 'shims');
  await mkdir(shims);
  for (const [name, body] of Object.entries(SHIMS)) {
    await writeFile(join(shims, name), `#!/bin/sh\n${body}\n`);
    await chmod(join(shims, name), 0o755);
  }
  const deployment: Record<string, unknown> = { booted: true, checksum: '1'.repeat(64), origin: '1'.repeat(64) };
  if (c.customOrigin) deployment['custom-origin'] = [c.customOrigin, 'Image generated via coreos-assembler'];
  await writeFile(join(dir, 'status.json'), JSON.stringify({ deployments: [deployment] }, null, 2));
  await writeFile(
    join(dir, 'inspect.json'),
    JSON.stringify([{ RepoDigests: [c.repoDigest ?? c.pullspec], Labels: c.labels ?? {} }], null, 5),
  );
  await writeFile(join(dir, 'image-pullspec'), `${c.pullspec}\n`);
  await writeFile(join(dir, 'cmdline'), `${c.cmdline ?? CMDLINE}\n`);
  await writeFile(join(dir, 'refs'), c.refs ?? '');
  if (c.tuning !== undefined) await writeFile(join(dir, 'kernel-args'), c.tuning);
  if (c.rebootNeeded) await writeFile(join(dir, 'reboot-needed'), '');
  if (c.pullFails) await writeFile(join(dir, 'pull-fails'), '');
  const script = (await readFile(join(repoRoot, 'images', 'fixture', 'guest', 'pivot'), 'utf8'))
    .replace('export PATH=/usr/sbin:/usr/bin HOME=/root', `export PATH=${shims}:/usr/bin:/bin HOME=${dir}`)
    .replace('. /usr/lib/fixture/glog.sh', `. ${join(repoRoot, 'images', 'fixture', 'guest', 'glog.sh')}`)
    .replace('etc_pivot_file=/etc/pivot/image-pullspec', `etc_pivot_file=${dir}/image-pullspec`)
    .replace('run_pivot_reboot_file=/run/pivot/reboot-needed', `run_pivot_reboot_file=${dir}/reboot-needed`)
    .replace('kubelet_auth_file=/var/lib/kubelet/config.json', `kubelet_auth_file=${dir}/config.json`)
    .replace('kernel_tuning_file=/etc/pivot/kernel-args', `kernel_tuning_file=${dir}/kernel-args`)
    .replace('cmdline_file=/proc/cmdline', `cmdline_file=${dir}/cmdline`)
    .replace('mktemp -d /tmp/pivot.XXXXXX', `mktemp -d ${dir}/pivot.XXXXXX`)
    // busybox sh runs its own applets before PATH: the backoff's sleep is named by path.
    .replace('    sleep "$delay"', `    ${shims}/sleep "$delay"`);
  await writeFile(join(dir, 'pivot'), script);
  const result = await exec(
    'busybox',
    ['sh', '-c', 'busybox sh "$@" 2>&1', 'sh', join(dir, 'pivot'), ...(c.args ?? [])],
    {
      env: { ...process.env, T: dir },
    },
  ).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );
  const calls = (await readFile(join(dir, 'calls'), 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
  const out = {
    ...result,
    calls,
    lines: result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.replace(/^([IWEF])\d{4} [\d:.]+ +\d+ /, '$1 ')),
    pullspecKept: existsSync(join(dir, 'image-pullspec')),
  };
  await rm(dir, { recursive: true, force: true });
  return out;
}

const rebases = (calls: string[]) => calls.filter((call) => call.startsWith('rpm-ostree rebase'));

test('TestCompareOSImageURL: the same digest under another name is no change (no pull), exit 0 or 77', async (t) => {
  const run = await runCase({ customOrigin: `pivot://${REF_A}`, pullspec: REF_B });
  t.is(run.code, 0, run.stdout);
  t.deepEqual(
    run.lines.map((line) => line.replace(/ \/\S+\/(image-pullspec|kernel-args)/g, ' DIR/$1')),
    [
      'pivot version 0.0.5 (fixture stand-in for openshift/pivot e31a72d)',
      'I root.go:373] Using image pullspec from DIR/image-pullspec',
      'I run.go:16] Running: rpm-ostree status --json',
      `I root.go:263] Previous pivot: ${REF_A}`,
      'I root.go:248] Current and target osImageURL have matching digest "sha256:0743a3cc3bcf3b4aabb814500c2739f84cb085ff4e7ec7996aef7977c4c19c7f"',
      // imgid is "" when nothing was pulled: upstream still runs `podman rmi ""` (root.go:396), ignoring its error
      'I run.go:16] Running: podman rmi ',
      'Error: repository name must have at least one component',
      'W run.go:75] (ignored) podman: exit status 125',
      'I root.go:402] unable to parse tuning file DIR/kernel-args: stat DIR/kernel-args: no such file or directory',
      'I root.go:415] Already at target pivot; exiting...',
    ],
  );
  t.false(run.calls.some((call) => call.startsWith('podman pull')));
  t.false(run.pullspecKept, 'deleted: the pullspec was read from the file');
  const exit77 = await runCase({ customOrigin: `pivot://${REF_A}`, pullspec: REF_A, args: ['--unchanged-exit-77'] });
  t.is(exit77.code, 77);
  t.false(
    exit77.lines.some((line) => line.includes('matching digest')),
    'equal strings need no digest',
  );
});

test('TestCompareOSImageURL: another digest is pulled, rebased with a pivot:// origin, rebooted when asked', async (t) => {
  const run = await runCase({
    customOrigin: `pivot://${REF_A}`,
    pullspec: REF_C,
    labels: { 'com.coreos.ostree-commit': CSUM, version: '2' },
    rebootNeeded: true,
  });
  t.is(run.code, 0, run.stdout);
  t.true(run.lines.includes(`I root.go:333] Pivoting to: 2 (${CSUM})`));
  t.is(rebases(run.calls).length, 1);
  t.regex(
    rebases(run.calls)[0]!,
    new RegExp(
      `^rpm-ostree rebase --experimental /\\S+/mnt/srv/repo:${CSUM} --custom-origin-url pivot://${REF_C.replace(/[.]/g, '\\.')} --custom-origin-description Managed by pivot tool$`,
    ),
  );
  t.deepEqual(
    run.calls.filter((call) => call.startsWith('podman')).map((call) => call.split(' ').slice(0, 2).join(' ')),
    [
      'podman pull',
      'podman inspect',
      'podman kill',
      'podman rm',
      'podman create',
      'podman mount',
      'podman kill',
      'podman rm',
      'podman rmi',
    ],
  );
  t.is(run.calls.at(-1), 'systemctl reboot');
  // the old fixed-name container: kill refused and ignored (utils.RunIgnoreErr)
  t.true(run.lines.includes('W run.go:75] (ignored) podman: exit status 125'));
});

test('no pivot:// origin (an unpivoted boot image): openshift/pivot dies before it pulls, as upstream', async (t) => {
  // compareOSImageURL("", desired): getRefDigest("") → ParseNormalizedNamed → "docker.io/library/" → invalid format
  const run = await runCase({ pullspec: REF_C, labels: { 'com.coreos.ostree-commit': CSUM } });
  t.is(run.code, 255);
  t.is(run.lines.at(-1), 'F root.go:284] parsing current osImageURL: parsing reference: "": invalid reference format');
  t.false(run.lines.some((line) => line.includes('Previous pivot')));
  t.false(run.calls.some((call) => call.startsWith('podman')));
  t.true(run.pullspecKept, 'kept: the next boot runs pivot again');
});

test('a pullspec by tag is pulled unconditionally and resolved through RepoDigests[0]', async (t) => {
  const run = await runCase({
    pullspec: 'registry.example.com/foo/bar:latest',
    repoDigest: REF_C,
    labels: { 'com.coreos.ostree-commit': CSUM },
  });
  t.is(run.code, 0, run.stdout);
  t.true(run.lines.includes(`I root.go:306] Resolved to: ${REF_C}`));
  t.true(run.lines.includes(`I root.go:335] Pivoting to: ${CSUM}`));
  t.true(rebases(run.calls)[0]!.includes(`--custom-origin-url pivot://${REF_C} `));
  t.false(run.calls.includes('systemctl reboot'), 'no --reboot, no /run/pivot/reboot-needed: staged, no reboot');
});

test('TestParseTuningFile: only nosmt is tunable; ADD when absent from the cmdline, DELETE when present', async (t) => {
  const add = await runCase({ customOrigin: `pivot://${REF_A}`, pullspec: REF_A, tuning: TUNING });
  t.is(add.code, 0, add.stdout);
  t.deepEqual(
    add.calls.filter((call) => call.startsWith('rpm-ostree kargs')),
    ['rpm-ostree kargs --append=nosmt'],
  );
  t.true(add.lines.includes('I root.go:134] aaaa not a whitelisted kernel argument'));
  t.true(add.lines.includes('I root.go:148] skipping "nosmt" as it is not present in the current argument list'));
  t.true(add.lines.includes('I root.go:151] nope not a whitelisted kernel argument'));
  t.false(
    add.lines.some((line) => line.includes('Already at target pivot')),
    'a karg change is a change',
  );
  const del = await runCase({
    customOrigin: `pivot://${REF_A}`,
    pullspec: REF_A,
    tuning: TUNING,
    cmdline: CMDLINE_NOSMT,
    rebootNeeded: true,
  });
  t.deepEqual(
    del.calls.filter((call) => call.startsWith('rpm-ostree kargs') || call.startsWith('systemctl')),
    ['rpm-ostree kargs --delete=nosmt', 'systemctl reboot'],
  );
  t.true(del.lines.includes('I root.go:131] skipping "nosmt" as it is already in use'));
  // TestParseTuningFile's empty file: nothing to do
  const none = await runCase({ customOrigin: `pivot://${REF_A}`, pullspec: REF_A, tuning: '' });
  t.true(none.lines.includes('I root.go:415] Already at target pivot; exiting...'));
});

test('a pull that keeps failing: 6 tries 5/10/20/40/80 s apart (RunExt), then fatal, exit 255', async (t) => {
  const run = await runCase({ customOrigin: `pivot://${REF_A}`, pullspec: REF_C, pullFails: true });
  t.is(run.code, 255);
  t.is(run.calls.filter((call) => call.startsWith('podman pull')).length, 6);
  t.deepEqual(
    run.calls.filter((call) => call.startsWith('sleep')),
    ['sleep 5', 'sleep 10', 'sleep 20', 'sleep 40', 'sleep 80'],
  );
  t.is(run.lines.filter((line) => line === 'W run.go:40] podman failed: exit status 125; retrying...').length, 6);
  t.is(run.lines.at(-1), 'F run.go:48] podman: timed out waiting for the condition');
});

test('no label and no ref: ostree rev-parse of the one empty "ref" fails, fatal (oscontainers have no refs)', async (t) => {
  const run = await runCase({ customOrigin: `pivot://${REF_A}`, pullspec: REF_C, refs: '' });
  t.true(run.lines.includes('I root.go:338] No com.coreos.ostree-commit label found in metadata! Inspecting...'));
  t.true(run.lines.includes('I root.go:341] Using ref '));
  t.true(
    run.calls.some((call) => /^ostree rev-parse --repo \S+ ?$/.test(call)),
    run.calls.join('\n'),
  );
  t.is(run.code, 255);
  t.is(run.lines.at(-1), 'F run.go:84] ostree: exit status 1');
});
