/**
 * The fixture's machine-config-daemon stand-in (images/fixture/mco/machine-config-daemon), run on this host with
 * busybox sh and real jq, its decisions checked through shims for the tools it calls: rpm-ostree, skopeo, podman,
 * systemd-run, systemctl, logger, sleep (each records its arguments). The guest's paths are moved under a temporary
 * directory, logger and sleep are named by path (busybox sh would run its applets) and the backoff's wait is
 * recorded, not waited: the only rewrites of the script. --root-mount=/ skips the re-exec into the host, as upstream
 * does for "/". Upstream's own fixtures where MCO has them (release-4.13 a57ca291): pkg/daemon/rpm-ostree_test.go
 * TestParseVersion (the `rpm-ostree --version` YAML) and pkg/daemon/update_test.go TestKernelAguments (kargs).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { classify, type GuestEvent, initialState } from '../../src/engine/classifier.js';
import { encapsulatedMachineConfig } from '../../src/ignition/mcd-fragment.js';
import { repoRoot } from '../helpers/cli.js';

const exec = promisify(execFile);
const TARGET = `10.0.2.2:5000/devpivot/fixture-2@sha256:${'2'.repeat(64)}`;
const BOOTED = `10.0.2.2:5000/devpivot/fixture-1@sha256:${'1'.repeat(64)}`;
const CSUM = 'c'.repeat(64);

const SHIMS: Record<string, string> = {
  'rpm-ostree': `case "$1" in
  --version) cat "$T/version.yaml" ;;
  status) cat "$T/status.json" ;;
  rebase) echo "rpm-ostree $*" >>"$T/calls"; [ -z "$REBASE_FAILS" ] || { echo "error: $REBASE_FAILS" >&2; exit 1; }
    echo 'Staging deployment...done' ;;
  *) echo "rpm-ostree $*" >>"$T/calls"; echo done ;;
esac`,
  // skopeo 1.9.3's own words when the registry is down (seen on this host against a closed port)
  skopeo: `echo "skopeo $*" >>"$T/calls"
if [ -n "$INSPECT_FAILS" ]; then
  echo 'time="2026-12-04T18:14:21Z" level=warning msg="Failed, retrying in 1s ... (1/2). Error: pinging container registry 10.0.2.2:5000: connect: connection refused"' >&2
  echo 'time="2026-12-04T18:14:24Z" level=fatal msg="Error parsing image name \\"docker://'"$INSPECT_FAILS"'\\": pinging container registry 10.0.2.2:5000: connect: connection refused"' >&2
  exit 1
fi
cat "$T/inspect.json"`,
  podman: `echo "podman $*" >>"$T/calls"
case "$1" in pull) echo imageid ;; create) echo cid ;; mount) echo "$T/mnt" ;; esac`,
  'systemd-run': 'echo "systemd-run $*" >>"$T/calls"',
  systemctl: 'echo "systemctl $*" >>"$T/calls"',
  logger: 'cat >>"$T/journal"',
  // The retry loop's minute: stop the stand-in instead.
  sleep: 'echo "sleep $*" >>"$T/calls"; kill -TERM "$PPID"',
};

interface Case {
  booted: { customOrigin?: string; containerRef?: string; version: string };
  labels: Record<string, string>;
  kernelArguments?: string[];
  /** `rpm-ostree --version`; by default MCO's TestParseVersion fixture with `container` added */
  version?: string;
  target?: string;
  noKubeconfig?: boolean;
  noMachineConfig?: boolean;
  authFile?: boolean;
  rebaseFails?: string;
  inspectFails?: boolean;
}

/** pkg/daemon/rpm-ostree_test.go TestParseVersion (MCO a57ca291): rpm-ostree 2022.10, without `container`. */
const VERSION_2022_10 = `rpm-ostree:
  Version: '2022.10'
  Git: 6b302116c969397fd71899e3b9bb3b8c100d1af9
  Features:
   - rust
   - compose
   - rhsm
`;
const VERSION_WITH_CONTAINER = `${VERSION_2022_10}   - container\n`;

async function runCase(c: Case) {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-mcd-'));
  const shims = join(dir, 'shims');
  await mkdir(shims);
  await mkdir(join(dir, 'etc'));
  for (const [name, body] of Object.entries(SHIMS)) {
    await writeFile(join(shims, name), `#!/bin/sh\n${body}\n`);
    await chmod(join(shims, name), 0o755);
  }
  const deployment: Record<string, unknown> = { booted: true, checksum: '1'.repeat(64), version: c.booted.version };
  if (c.booted.customOrigin) deployment['custom-origin'] = [c.booted.customOrigin, 'Managed by pivot tool'];
  if (c.booted.containerRef) deployment['container-image-reference'] = c.booted.containerRef;
  await writeFile(join(dir, 'status.json'), JSON.stringify({ deployments: [deployment] }));
  await writeFile(join(dir, 'inspect.json'), JSON.stringify({ Labels: c.labels }));
  await writeFile(join(dir, 'version.yaml'), c.version ?? VERSION_WITH_CONTAINER);
  const encapsulated = join(dir, 'etc', 'ignition-machine-config-encapsulated.json');
  if (!c.noMachineConfig)
    await writeFile(
      encapsulated,
      JSON.stringify(encapsulatedMachineConfig(c.target ?? TARGET, c.kernelArguments ?? [])),
    );
  if (!c.noKubeconfig) await writeFile(join(dir, 'kubeconfig'), 'apiVersion: v1\nkind: Config\n', { mode: 0o644 });
  if (c.authFile) await writeFile(join(dir, 'config.json'), '{}\n');
  const script = (await readFile(join(repoRoot, 'images', 'fixture', 'mco', 'machine-config-daemon'), 'utf8'))
    .replace('export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root', `export PATH=${shims}:/usr/bin:/bin HOME=${dir}`)
    .replace('encapsulated=/etc/', `encapsulated=${dir}/etc/`)
    .replace('kubelet_auth=/var/lib/kubelet/config.json', `kubelet_auth=${dir}/config.json`)
    .replace('content_base=/run/mco-machine-os-content', `content_base=${dir}/content`)
    .replace('kubeconfig=/etc/kubernetes/kubeconfig', `kubeconfig=${dir}/kubeconfig`)
    .replace('rpm_ostreed_dropin=/run/', `rpm_ostreed_dropin=${dir}/run/`)
    .replace('ostree_auth=/run/ostree/auth.json', `ostree_auth=${dir}/run/ostree/auth.json`)
    .replace('backoff_sleep() { sleep "$1"; }', 'backoff_sleep() { echo "backoff $1" >>"$T/calls"; }')
    // its scratch directory too: the sleep shim ends the script by a signal, which skips its EXIT trap
    .replace('mktemp -d /tmp/mcd.XXXXXX', `mktemp -d ${dir}/mcd.XXXXXX`)
    .replaceAll('/usr/lib/fixture/glog.sh', join(repoRoot, 'images', 'fixture', 'guest', 'glog.sh'))
    // busybox sh runs its own applets before PATH: these two shims are named by path.
    .replace('| logger', `| ${shims}/logger`)
    .replace('  sleep 60', `  ${shims}/sleep 60`);
  await writeFile(join(dir, 'machine-config-daemon'), script);
  const env = {
    ...process.env,
    T: dir,
    REBASE_FAILS: c.rebaseFails ?? '',
    INSPECT_FAILS: c.inspectFails ? (c.target ?? TARGET) : '',
  };
  // Both streams in one, in the order printed, as the console shows them.
  const args = [join(dir, 'machine-config-daemon'), 'firstboot-complete-machineconfig', '--root-mount=/'];
  const result = await exec('busybox', ['sh', '-c', 'busybox sh "$@" 2>&1', 'sh', ...args], { env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number | null; signal?: string; stdout: string; stderr: string }) => ({
      code: error.code ?? -1,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
  // What the console shows (the units' drop-ins send both streams there), through devpivot's classifier.
  let state = initialState;
  const events: GuestEvent[] = [];
  for (const line of result.stdout.split('\n').filter(Boolean)) {
    const classified = classify(state, { kind: 'vm.console', node: 'n', line });
    state = classified.state;
    events.push(...classified.events);
  }
  const read = (name: string) => readFile(join(dir, name), 'utf8').catch(() => '');
  const authLink = await readlink(join(dir, 'run', 'ostree', 'auth.json')).catch(() => '');
  const dropin = await read('run/systemd/system/rpm-ostreed.service.d/bug2111817.conf');
  const kubeconfigMode = await stat(join(dir, 'kubeconfig')).then(
    (s) => s.mode & 0o777,
    () => undefined,
  );
  const out = {
    ...result,
    calls: (await read('calls')).trim().split('\n').filter(Boolean),
    journal: await read('journal'),
    lines: result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.replace(/^([IWEF])\d{4} [\d:.]+ +\d+ /, '$1 ')),
    authLink,
    dropin,
    kubeconfigMode,
    encapsulated: existsSync(encapsulated),
    bak: existsSync(`${encapsulated}.bak`),
    events: events.map((e) =>
      e.kind === 'guest.pivot' ? `${e.phase} ${e.target}` : e.kind === 'guest.failure' ? `failure ${e.reason}` : e.kind,
    ),
  };
  await rm(dir, { recursive: true, force: true });
  return out;
}

test('booted image is the target, no kernel arguments: the file is removed, nothing else runs', async (t) => {
  const run = await runCase({ booted: { customOrigin: `pivot://${TARGET}`, version: '2' }, labels: {} });
  t.is(run.code, 0, run.stderr);
  // only Initialize's bug2111817Workaround (rpm-ostree.go:66-86): the drop-in, a daemon-reload
  t.deepEqual(run.calls, ['systemctl daemon-reload']);
  t.is(run.dropin, '[Service]\nInaccessiblePaths=\n');
  t.false(run.encapsulated);
  t.false(run.bak);
  t.deepEqual(run.lines, [
    'I update.go:2061] Running: systemctl daemon-reload',
    'I rpm-ostree.go:85] Enabled workaround for bug 2111817',
    `I daemon.go:262] Booted osImageURL: ${TARGET} (2) ${'1'.repeat(64)}`,
    'I rpm-ostree.go:382] Running captured: rpm-ostree --version',
    'I daemon.go:1108] rpm-ostree has container feature',
    'I update.go:183] No changes from mco-empty-mc to rendered-worker-devpivot',
  ]);
});

test('Initialize links /run/ostree/auth.json to the kubelet pull secret (useKubeletConfigSecrets), once', async (t) => {
  const run = await runCase({ booted: { customOrigin: `pivot://${TARGET}`, version: '2' }, labels: {} });
  t.true(run.authLink.endsWith('/config.json'), run.authLink);
});

test('the booted osImageURL is read before the MachineConfig (daemon.New), whose absence fails the attempt', async (t) => {
  const run = await runCase({
    booted: { customOrigin: `pivot://${BOOTED}`, version: '1' },
    labels: {},
    noMachineConfig: true,
  });
  t.not(run.code, 0);
  const booted = run.lines.findIndex((line) => line.startsWith('I daemon.go:262] Booted osImageURL'));
  const error = run.lines.findIndex((line) =>
    /^W firstboot_complete_machineconfig\.go:65\] error: open \S+: no such file or directory$/.test(line),
  );
  t.true(booted >= 0 && error > booted, run.lines.join('\n'));
});

test('no /etc/kubernetes/kubeconfig: update() fails in updateKubeConfigPermission before any OS change', async (t) => {
  const run = await runCase({
    booted: { customOrigin: `pivot://${BOOTED}`, version: '1' },
    labels: { 'ostree.bootable': 'true' },
    noKubeconfig: true,
  });
  t.not(run.code, 0);
  t.true(run.lines.includes('I update.go:1670] updating the permission of the kubeconfig to: 0o600'));
  t.true(
    run.lines.some((line) =>
      /firstboot_complete_machineconfig\.go:65\] error: Cannot stat \S+kubeconfig: stat \S+kubeconfig: no such file or directory$/.test(
        line,
      ),
    ),
    run.lines.join('\n'),
  );
  t.false(
    run.calls.some((call) => call.startsWith('rpm-ostree') || call.startsWith('skopeo')),
    run.calls.join(),
  );
  t.true(run.encapsulated);
});

test('kernel arguments split as generateKargs does (update_test.go TestKernelAguments, old list empty)', async (t) => {
  // TestKernelAguments' new lists, with nothing old, as at firstboot
  const cases: [string[], string[]][] = [
    [['hello=world'], ['--append=hello=world']],
    [
      ['foo', 'bar=1', 'hello=world'],
      ['--append=foo', '--append=bar=1', '--append=hello=world'],
    ],
    [
      [' baz=test bar="hello world"', 'foo'],
      ['--append=baz=test', '--append=bar="hello world"', '--append=foo'],
    ],
    [
      ['hugepagesz=1G hugepages=4', 'hugepagesz=2M hugepages=6'],
      ['--append=hugepagesz=1G', '--append=hugepages=4', '--append=hugepagesz=2M', '--append=hugepages=6'],
    ],
  ];
  for (const [kernelArguments, expected] of cases) {
    const run = await runCase({
      booted: { customOrigin: `pivot://${TARGET}`, version: '2' },
      labels: {},
      kernelArguments,
    });
    t.is(run.code, 0, run.stdout);
    t.deepEqual(
      run.calls.find((call) => call.startsWith('rpm-ostree kargs')),
      `rpm-ostree kargs ${expected.join(' ')}`,
    );
    t.true(run.lines.includes(`I update.go:1030] Running rpm-ostree [kargs ${expected.join(' ')}]`));
  }
});

test('kernel arguments only, the target booted: the image is still inspected and the pending deployment cleaned', async (t) => {
  const run = await runCase({
    booted: { containerRef: `ostree-unverified-registry:${TARGET}`, version: '2' },
    labels: { 'ostree.bootable': 'true' },
    kernelArguments: ['a=1'],
  });
  t.is(run.code, 0, run.stdout);
  t.deepEqual(run.calls.slice(1, -1), [
    `skopeo inspect --no-tags --retry-times 2 docker://${TARGET}`,
    'rpm-ostree cleanup -p',
    'rpm-ostree kargs --append=a=1',
  ]);
});

test('a failed layered rebase is rolled back with cleanup -p, and the attempt fails with its error', async (t) => {
  const run = await runCase({
    booted: { containerRef: `ostree-unverified-registry:${BOOTED}`, version: '1' },
    labels: { 'ostree.bootable': 'true' },
    rebaseFails: 'Preparing import: Fetching manifest: boom',
  });
  t.not(run.code, 0);
  t.deepEqual(
    run.calls.filter((call) => call.startsWith('rpm-ostree')),
    [
      'rpm-ostree cleanup -p',
      `rpm-ostree rebase --experimental ostree-unverified-registry:${TARGET}`,
      'rpm-ostree cleanup -p',
    ],
  );
  const error = `error running rpm-ostree rebase --experimental ostree-unverified-registry:${TARGET}: error: Preparing import: Fetching manifest: boom`;
  t.true(
    run.lines.some((line) =>
      line.startsWith(`I update.go:2187] Rolling back applied changes to OS due to error: ${error}`),
    ),
    run.lines.join('\n'),
  );
});

test('the registry down: the inspect is retried (skopeo, as containers/common retry) and fails in MCO words', async (t) => {
  const run = await runCase({
    booted: { customOrigin: `pivot://${BOOTED}`, version: '1' },
    labels: {},
    inspectFails: true,
  });
  t.not(run.code, 0);
  t.true(
    run.lines.some(
      (line) => line.startsWith('time="') && line.includes('level=warning msg="Failed, retrying in 1s ... (1/2).'),
    ),
  );
  t.true(
    run.lines.some(
      (line) =>
        line ===
        `W firstboot_complete_machineconfig.go:65] error: Error checking type of update image: error parsing image name "${TARGET}": pinging container registry 10.0.2.2:5000: connect: connection refused`,
    ),
    run.lines.join('\n'),
  );
});

test('rpm-ostree --version as TestParseVersion has it (no container): not new enough', async (t) => {
  const run = await runCase({
    booted: { customOrigin: `pivot://${BOOTED}`, version: '1' },
    labels: {},
    version: VERSION_2022_10,
  });
  t.true(
    run.lines.some((line) => line.startsWith('I daemon.go:1091] rpm-ostree is not new enough for new-format image')),
  );
});

test('native target (ostree.bootable): cleanup -p, rebase by the registry reference, kargs, .bak, reboot', async (t) => {
  const run = await runCase({
    booted: { containerRef: `ostree-unverified-registry:${BOOTED}`, version: '1' },
    labels: { 'ostree.bootable': 'true', 'com.coreos.ostree-commit': CSUM },
    kernelArguments: ['a=1', 'b'],
  });
  t.is(run.code, 0, run.stderr);
  t.deepEqual(run.calls, [
    'systemctl daemon-reload',
    `skopeo inspect --no-tags --retry-times 2 docker://${TARGET}`,
    'rpm-ostree cleanup -p',
    `rpm-ostree rebase --experimental ostree-unverified-registry:${TARGET}`,
    'rpm-ostree kargs --append=a=1 --append=b',
    'systemd-run --unit machine-config-daemon-reboot --description machine-config-daemon: Completing firstboot provisioning to rendered-worker-devpivot /bin/sh -c systemctl reboot',
  ]);
  t.false(run.encapsulated);
  t.true(run.bak);
  t.is(run.kubeconfigMode, 0o600, 'updateKubeConfigPermission');
  t.true(
    run.lines.includes('I update.go:485] Checking Reconcilable for config mco-empty-mc to rendered-worker-devpivot'),
  );
  t.true(run.lines.includes(`I daemon.go:262] Booted osImageURL: ${BOOTED} (1) ${'1'.repeat(64)}`));
  t.true(run.lines.includes(`I update.go:1925] Updating OS to layered image ${TARGET}`));
  t.true(run.lines.includes(`I rpm-ostree.go:342] Executing rebase to ${TARGET}`));
  t.true(run.lines.includes('I update.go:1030] Running rpm-ostree [kargs --append=a=1 --append=b]'));
  t.true(
    run.lines.includes(
      'I update.go:2127] initiating reboot: Completing firstboot provisioning to rendered-worker-devpivot',
    ),
  );
  t.regex(run.journal, /^machine-config-daemon\[\d+\]: initiating reboot: Completing firstboot provisioning/m);
  t.deepEqual(run.events, [`pulling ${TARGET}`, `staged ${TARGET}`, `rebooting ${TARGET}`], run.stdout);
});

test('legacy target: oc is absent, podman pull/create/mount, rebase to REPO:CSUM with the pivot:// origin', async (t) => {
  const run = await runCase({
    booted: { customOrigin: `pivot://${BOOTED}`, version: '1' },
    labels: { 'com.coreos.ostree-commit': CSUM, version: '2' },
    authFile: true,
  });
  t.is(run.code, 0, run.stderr);
  // ExtractOSImage: oc under nice/ionice (RunExtBackground), 2 retries 5 s and 10 s apart, then the fallback
  const oc = run.lines.filter((line) => line.includes('Running: nice -- ionice -c 3 oc image extract -v 10 --path /:'));
  t.is(oc.length, 3);
  t.regex(oc[0]!, new RegExp(`--registry-config \\S+/config\\.json ${TARGET.replace(/[.]/g, '\\.')}$`));
  t.is(run.lines.filter((line) => line === 'ionice: failed to execute oc: No such file or directory').length, 3);
  t.is(
    run.lines.filter((line) =>
      line.startsWith('W run.go:45] nice failed: running nice -- ionice -c 3 oc image extract'),
    ).length,
    3,
  );
  t.deepEqual(
    run.calls.filter((call) => call.startsWith('backoff')),
    ['backoff 5', 'backoff 10'],
  );
  t.true(
    run.lines.some((line) => line.startsWith('I run.go:19] Running: nice -- ionice -c 3 podman pull -q --authfile ')),
  );
  t.true(run.lines.includes('imageid'), "the pull's output passed through (runImpl multiplexes it)");
  const rebase = run.calls.find((call) => call.startsWith('rpm-ostree rebase'));
  t.regex(
    rebase ?? '',
    new RegExp(
      `^rpm-ostree rebase --experimental /\\S+/mnt/srv/repo:${CSUM} --custom-origin-url pivot://${TARGET.replace(/[.]/g, '\\.')} --custom-origin-description Managed by machine-config-operator$`,
    ),
  );
  t.deepEqual(
    run.calls.filter((call) => call.startsWith('podman')).map((call) => call.split(' ').slice(0, 2).join(' ')),
    ['podman pull', 'podman create', 'podman mount', 'podman rm', 'podman rmi'],
  );
  t.true(
    run.lines.some((line) => /^I run\.go:19\] Running: nice -- ionice -c 3 podman cp [0-9a-z]+:\/ \//.test(line)),
    'podman cp logged as upstream',
  );
  t.false(
    run.calls.some((call) => call.includes('cleanup')),
    'the legacy path does not clean up first',
  );
  t.true(run.lines.includes('I update.go:289] Falling back to using podman cp to fetch OS image content'));
  t.true(run.lines.includes(`I rpm-ostree.go:208] Previous pivot: ${BOOTED}`));
  t.true(run.lines.includes(`I rpm-ostree.go:240] Pivoting to: 2 (${CSUM})`));
  t.true(run.bak);
  // The MachineConfig's name, not the extraction container's (a VM run once printed the latter).
  t.regex(run.calls.at(-1) ?? '', /^systemd-run .* Completing firstboot provisioning to rendered-worker-devpivot /);
  t.deepEqual(run.events.slice(0, 2), [`pulling ${TARGET}`, `staging ${TARGET}`]);
});

test('rpm-ostree without the container feature: an error, then a retry a minute later', async (t) => {
  const run = await runCase({
    booted: { customOrigin: `pivot://${BOOTED}`, version: '1' },
    labels: {},
    version: VERSION_2022_10,
  });
  t.not(run.code, 0);
  t.true(run.calls.includes('sleep 60'));
  t.true(run.lines.some((line) => /^W firstboot_complete_machineconfig\.go:65\] error: .*deploy-from-self/.test(line)));
  t.true(run.lines.includes('I firstboot_complete_machineconfig.go:66] Sleeping 1 minute for retry'));
  t.true(run.encapsulated, 'the MachineConfig is kept for the retry');
  t.true(
    run.events.some((e) => e.startsWith('failure machine-config daemon firstboot error: W')),
    run.events.join(),
  );
});

/**
 * The podman stand-in's `run` as the firstboot unit calls it, with the MCO image devpivot builds, from the embedded
 * registry on loopback: pulled, extracted, the bind in place, the stand-in run chrooted by the image's static
 * busybox. The bind is a temporary directory here (the unit binds the host's /), and the store is moved under it.
 */
async function withPodman(fn: (dir: string, podman: string, pullspec: string) => Promise<void>): Promise<void> {
  const { buildMcoImage, pushMcoImage } = await import('../../src/oscontainer/mco-image.js');
  const { startRegistry } = await import('../../src/registry/server.js');
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-podman-run-'));
  const registry = await startRegistry({ storage: join(dir, 'registry'), port: 0 });
  try {
    const image = await buildMcoImage({
      standIn: join(repoRoot, 'images', 'fixture', 'mco', 'machine-config-daemon'),
      busybox: '/bin/busybox',
    });
    const digest = await pushMcoImage(image, registry.address, 'devpivot-fixture/mco');
    const pullspec = `${registry.address}/devpivot-fixture/mco@${digest}`;
    await mkdir(join(dir, 'shims'));
    await writeFile(join(dir, 'registries.conf'), `[[registry]]\nlocation = "${registry.address}"\ninsecure = true\n`);
    await writeFile(
      join(dir, 'shims', 'skopeo'),
      `#!/bin/sh\nexec /usr/bin/skopeo --registries-conf ${join(dir, 'registries.conf')} "$@"\n`,
    );
    await chmod(join(dir, 'shims', 'skopeo'), 0o755);
    const podman = (await readFile(join(repoRoot, 'images', 'fixture', 'guest', 'podman'), 'utf8'))
      .replace('export PATH=/usr/sbin:/usr/bin', `export PATH=${join(dir, 'shims')}:/usr/sbin:/usr/bin:/sbin:/bin`)
      .replace('store=/var/lib/containers/fixture-storage', `store=${join(dir, 'store')}`);
    await writeFile(join(dir, 'podman'), podman);
    await fn(dir, join(dir, 'podman'), pullspec);
  } finally {
    await registry.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * busybox's argv for one of the firstboot unit's two `podman run`s of the MCO image with ARGS (the second adds
 * --pid=host: src/ignition/mcd-fragment.ts).
 */
const mcdRun = (
  podman: string,
  host: string,
  pullspec: string,
  args: string[],
  options: { pidHost?: boolean } = {},
) => [
  'sh',
  podman,
  'run',
  '--rm',
  '--privileged',
  ...(options.pidHost ? ['--pid=host'] : []),
  '--net=host',
  '-v',
  `${host}:/rootfs`,
  '--entrypoint',
  'machine-config-daemon',
  pullspec,
  ...args,
];

test.serial('podman run: the MCO image runs its entrypoint chrooted, with the bind, and --rm removes it', async (t) => {
  await withPodman(async (dir, podman, pullspec) => {
    const host = join(dir, 'host');
    await mkdir(host);
    await writeFile(join(host, 'marker'), 'from the host\n');
    const run = await exec(
      'busybox',
      mcdRun(podman, host, pullspec, ['firstboot-complete-machineconfig', '--maybe-persist-nics']),
    );
    // podman's own pull progress (the image was not pulled before), then nothing: PersistNetworkInterfaces returns
    // nil silently on a host that is neither RHEL 8 nor 9 (daemon.go:1693-1697).
    t.deepEqual(
      run.stderr
        .split('\n')
        .filter(Boolean)
        .map((line) => (line.startsWith('Copying ') ? line.replace(/sha256:[0-9a-f]{64}/, 'sha256:…') : line)),
      [
        `Trying to pull ${pullspec}...`,
        'Getting image source signatures',
        'Copying blob sha256:…',
        'Copying config sha256:…',
        'Writing manifest to image destination',
        'Storing signatures',
      ],
    );
    // the entrypoint does run, chrooted in the image: its refusal of an unknown command
    const refused = await exec('busybox', mcdRun(podman, host, pullspec, ['frob'])).catch(
      (e: { code: number; stderr: string }) => e,
    );
    t.is((refused as { code: number }).code, 1);
    t.regex((refused as { stderr: string }).stderr, /^Error: unknown command "frob" for "machine-config-daemon"/m);
    const containers = await exec('ls', ['-A', join(dir, 'store', 'containers')]);
    t.is(containers.stdout, '', '--rm removed the container');
    const mounts = await readFile('/proc/self/mountinfo', 'utf8');
    t.false(mounts.includes(dir), 'no bind left');
    t.is(await readFile(join(host, 'marker'), 'utf8'), 'from the host\n');
  });
});

test.serial('the MCD re-executes itself in the root bound at /rootfs (copied to its /run/bin)', async (t) => {
  await withPodman(async (dir, podman, pullspec) => {
    // A host root with a shell and nothing else: the re-executed copy starts, finds no MachineConfig, and retries.
    const host = join(dir, 'host');
    await mkdir(join(host, 'bin'), { recursive: true });
    await mkdir(join(host, 'tmp'));
    await exec('cp', ['/bin/busybox', join(host, 'bin', 'busybox')]);
    for (const applet of ['sh', 'mktemp', 'date', 'cat', 'rm', 'sleep', 'logger'])
      await exec('ln', ['-s', 'busybox', join(host, 'bin', applet)]);
    const child = spawn(
      'busybox',
      mcdRun(podman, host, pullspec, ['firstboot-complete-machineconfig'], { pidHost: true }),
      { detached: true },
    );
    let stderr = '';
    const seen = new Promise<void>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('Sleeping 1 minute for retry')) resolve();
      });
      child.on('exit', () => resolve());
    });
    // (the deadline's timer is cleared: left pending, it would keep this worker alive for its full minute)
    let deadline: NodeJS.Timeout | undefined;
    await Promise.race([seen, new Promise((resolve) => (deadline = setTimeout(resolve, 60_000)))]);
    clearTimeout(deadline);
    // systemd stopping the unit: podman's trap stops the entrypoint and takes the binds down.
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve).once('error', resolve));
    // What is left of this test's process group (the retry's sleep) goes as well.
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    t.regex(stderr, /daemon\.go:482\] assuming we can use container binary chroot\(\) to host/);
    // The copy runs in the bound root: there it fails (this root has no /etc, no /dev) and retries.
    t.regex(stderr, /firstboot_complete_machineconfig\.go:65\] error: /);
    t.true(existsSync(join(host, 'run', 'bin', 'machine-config-daemon')), 'copied to /rootfs/run/bin');
    t.false((await readFile('/proc/self/mountinfo', 'utf8')).includes(dir), 'the binds are down after SIGTERM');
  });
});
