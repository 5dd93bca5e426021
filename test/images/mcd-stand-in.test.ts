/**
 * The fixture's machine-config-daemon stand-in (images/fixture/mco/machine-config-daemon), run on this host with
 * busybox sh and real jq, its decisions checked through shims for the tools it calls: rpm-ostree, skopeo, podman,
 * systemd-run, logger, sleep (each records its arguments). The guest's paths are moved under a temporary directory
 * and logger and sleep are named by path (busybox sh would run its applets): the only rewrites of the script.
 * --root-mount=/ skips the re-exec into the host, as upstream does for "/".
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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
  --version) printf "rpm-ostree:\\n Version: '2022.16'\\n Git: x\\n Features:\\n"; for f in $FEATURES; do echo "  - $f"; done ;;
  status) cat "$T/status.json" ;;
  rebase) echo "rpm-ostree $*" >>"$T/calls"; echo 'Staging deployment...done' ;;
  *) echo "rpm-ostree $*" >>"$T/calls"; echo done ;;
esac`,
  skopeo: 'echo "skopeo $*" >>"$T/calls"; cat "$T/inspect.json"',
  podman: `echo "podman $*" >>"$T/calls"
case "$1" in pull) echo imageid ;; create) echo cid ;; mount) echo "$T/mnt" ;; esac`,
  'systemd-run': 'echo "systemd-run $*" >>"$T/calls"',
  logger: 'cat >>"$T/journal"',
  // The retry loop's minute: stop the stand-in instead.
  sleep: 'echo "sleep $*" >>"$T/calls"; kill -TERM "$PPID"',
};

interface Case {
  booted: { customOrigin?: string; containerRef?: string; version: string };
  labels: Record<string, string>;
  kernelArguments?: string[];
  features?: string;
}

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
  const encapsulated = join(dir, 'etc', 'ignition-machine-config-encapsulated.json');
  await writeFile(encapsulated, JSON.stringify(encapsulatedMachineConfig(TARGET, c.kernelArguments ?? [])));
  const script = (await readFile(join(repoRoot, 'images', 'fixture', 'mco', 'machine-config-daemon'), 'utf8'))
    .replace('export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root', `export PATH=${shims}:/usr/bin:/bin HOME=${dir}`)
    .replace('encapsulated=/etc/', `encapsulated=${dir}/etc/`)
    .replace('kubelet_auth=/var/lib/kubelet/config.json', `kubelet_auth=${dir}/config.json`)
    .replace('content_base=/run/mco-machine-os-content', `content_base=${dir}/content`)
    // its scratch directory too: the sleep shim ends the script by a signal, which skips its EXIT trap
    .replace('mktemp -d /tmp/mcd.XXXXXX', `mktemp -d ${dir}/mcd.XXXXXX`)
    .replaceAll('/usr/lib/fixture/glog.sh', join(repoRoot, 'images', 'fixture', 'guest', 'glog.sh'))
    // busybox sh runs its own applets before PATH: these two shims are named by path.
    .replace('| logger', `| ${shims}/logger`)
    .replace('  sleep 60', `  ${shims}/sleep 60`);
  await writeFile(join(dir, 'machine-config-daemon'), script);
  const env = { ...process.env, T: dir, FEATURES: c.features ?? 'rust compose container' };
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
  const out = {
    ...result,
    calls: (await read('calls')).trim().split('\n').filter(Boolean),
    journal: await read('journal'),
    lines: result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.replace(/^([IWEF])\d{4} [\d:.]+ +\d+ /, '$1 ')),
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
  t.deepEqual(run.calls, []);
  t.false(run.encapsulated);
  t.false(run.bak);
  t.true(run.lines.includes('I daemon.go:1108] rpm-ostree has container feature'));
  t.true(run.lines.includes(`I daemon.go:262] Booted osImageURL: ${TARGET} (2) ${'1'.repeat(64)}`));
});

test('native target (ostree.bootable): cleanup -p, rebase by the registry reference, kargs, .bak, reboot', async (t) => {
  const run = await runCase({
    booted: { containerRef: `ostree-unverified-registry:${BOOTED}`, version: '1' },
    labels: { 'ostree.bootable': 'true', 'com.coreos.ostree-commit': CSUM },
    kernelArguments: ['a=1', 'b'],
  });
  t.is(run.code, 0, run.stderr);
  t.deepEqual(run.calls, [
    `skopeo inspect --no-tags docker://${TARGET}`,
    'rpm-ostree cleanup -p',
    `rpm-ostree rebase --experimental ostree-unverified-registry:${TARGET}`,
    'rpm-ostree kargs --append=a=1 --append=b',
    'systemd-run --unit machine-config-daemon-reboot --description machine-config-daemon: Completing firstboot provisioning to rendered-worker-devpivot /bin/sh -c systemctl reboot',
  ]);
  t.false(run.encapsulated);
  t.true(run.bak);
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
  });
  t.is(run.code, 0, run.stderr);
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
    features: 'rust compose',
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

test.serial('podman run: the MCO image runs its entrypoint chrooted, with the bind, and --rm removes it', async (t) => {
  await withPodman(async (dir, podman, pullspec) => {
    const host = join(dir, 'host');
    await mkdir(host);
    await writeFile(join(host, 'marker'), 'from the host\n');
    const run = await exec('busybox', [
      'sh',
      podman,
      'run',
      '--rm',
      '--privileged',
      '--net=host',
      '-v',
      `${host}:/rootfs`,
      '--entrypoint',
      'machine-config-daemon',
      pullspec,
      'firstboot-complete-machineconfig',
      '--maybe-persist-nics',
    ]);
    // The fallback glog (busybox's date, no %N) inside the image; upstream's return for a non-RHEL host.
    t.regex(
      run.stderr,
      /^I\d{4} \d{2}:\d{2}:\d{2}\.000000 +\d+ firstboot_complete_machineconfig\.go:43\] fixture: no nmstatectl/,
    );
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
      [
        'sh',
        podman,
        'run',
        '--rm',
        '--privileged',
        '--pid=host',
        '--net=host',
        '-v',
        `${host}:/rootfs`,
        '--entrypoint',
        'machine-config-daemon',
        pullspec,
        'firstboot-complete-machineconfig',
      ],
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
