/**
 * scenarios/mirror.yaml end to end: a loopback distribution registry plays quay.io (the shipped file's
 * `upstream:` port is replaced by this test's own), holding fixture v2 under openshift-release-dev/. The guest
 * keeps the upstream pullspec, its registries.conf.d drop-in sends the digest pull to the embedded registry, and
 * nothing reaches past the registry: no blocked destination is logged, and every upstream request came from
 * devpivot itself (through the counting proxy), each blob exactly once (the run has a store of its own).
 *
 * The same VM carries old-to-new-uefi.vm.test.ts's checks (it booted the same v1 and made the same legacy pivot to
 * v2): the disk boots through OVMF on both boots, GRUB's EFI image reads the syslinux configuration as RHCOS's does,
 * and ssh on v2 reaches the core user with the session's key while sshd refuses passwords.
 *
 * And native-refused.vm.test.ts's (a native driver given a pulled image without the bootable label): `refused`, an
 * rpm-ostree node given the same legacy image, is refused by the guest's rpm-ostree with ostree-ext's message, the
 * failure carries that reason, and the node stays on v1 without a reboot.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { loadFixture } from '../../src/fixture/fixture.js';
import { buildAndPush } from '../../src/oscontainer/index.js';
import { repoRoot } from '../helpers/cli.js';
import { type DockerRegistry, imageBlobs, startDockerRegistry } from '../oscontainer/docker-registry.js';
import { type CountingProxy, startCountingProxy } from '../registry/upstream.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

const REPOSITORY = 'openshift-release-dev/devpivot-fixture';
let dir: string;
let upstream: DockerRegistry;
let proxy: CountingProxy;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-mirror-vm-'));
  upstream = await startDockerRegistry();
  proxy = await startCountingProxy(`http://${upstream.hostPort}`);
});

test.after.always(async () => {
  await proxy?.close();
  await upstream?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test.serial(
  'mirror: the guest pulls quay.io/openshift-release-dev/… by digest from the embedded mirror; under UEFI; ssh reaches the core user; rpm-ostree refuses the legacy image, the failure carries the guest reason',
  async (t) => {
    const fixture = await loadFixture();
    const v2 = fixture.versions.find((entry) => entry.version === '2')!;
    // Straight into the upstream, not through the proxy: the proxy counts only what devpivot fetches.
    const pushed = await buildAndPush({
      repo: fixture.repo,
      commit: v2.commit,
      target: `${upstream.hostPort}/openshift-release-dev/devpivot-fixture:2`,
    });
    const shipped = await readFile(`${repoRoot}scenarios/mirror.yaml`, 'utf8');
    t.regex(shipped, /upstream: http:\/\/127\.0\.0\.1:5999\n/);
    const file = join(dir, 'mirror.yaml');
    await writeFile(file, shipped.replace('http://127.0.0.1:5999', proxy.url));

    // A state directory of its own: the embedded registry's store starts empty, so every blob must come upstream.
    const run = await runScenarioCli('mirror', { file, env: { DEVPIVOT_STATE_DIR: join(dir, 'state') } });
    t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
    t.deepEqual(bootedVersions(run.events), ['1', '2']);
    const targets = run.events.flatMap((e) => (e.kind === 'guest.pivot' ? [e.target] : []));
    t.true(targets.length > 0);
    for (const target of targets) t.is(target, `quay.io/openshift-release-dev/devpivot-fixture@${pushed.digest}`);
    // A name lookup or connection for quay.io would be blocked and logged; the kernel's own IPv6 autoconfiguration
    // frames (all IPv6 is blocked) are no pull.
    const blocked = run.events.filter(
      (e) => e.kind === 'log' && /tried to reach .*: blocked/.test(e.message) && !/reach ipv6:/.test(e.message),
    );
    t.deepEqual(blocked, []);
    // devpivot's `pull:` resolved the tag at the upstream (through the proxy) and fetched every blob of v2, once.
    t.true(
      proxy.requests.includes('GET /v2/openshift-release-dev/devpivot-fixture/manifests/2'),
      proxy.requests.join('\n'),
    );
    const { manifest, blobs } = await imageBlobs(upstream.hostPort, REPOSITORY, pushed.digest);
    const blobGets = proxy.requests.filter((r) => r.startsWith(`GET /v2/${REPOSITORY}/blobs/`));
    t.deepEqual([...blobGets].sort(), blobs.map((digest) => `GET /v2/${REPOSITORY}/blobs/${digest}`).sort());
    t.true(proxy.requests.every((r) => / \/v2\//.test(r)));
    // Prefetched (the default): every layer was in the cache before the node started.
    const started = run.events.findIndex((e) => e.kind === 'vm.started');
    for (const layer of manifest.layers) {
      const fetched = run.events.findIndex(
        (e) => e.kind === 'registry.upstream' && e.what === 'blob' && e.digest === layer.digest,
      );
      t.true(fetched >= 0 && fetched < started, `${layer.digest} fetched upstream before the node started`);
    }
    // (old-to-new-uefi) prepare, up, refused's failure, ignition, pulling, staged, booted, assert, then the two ssh
    // checks on v2 (the core user Ignition created, with the session's key in authorized_keys.d; sshd refuses
    // passwords), refused's assert
    t.is(run.steps.length, 11, run.steps.join('\n'));
    t.true(
      run.steps.every((step) => step.startsWith('✓ ')),
      run.steps.join('\n'),
    );
    t.is(run.steps.filter((step) => step.startsWith('✓ ssh node1 ')).length, 2, run.steps.join('\n'));
    // The kernel found UEFI firmware (OVMF is EDK II), on both boots; under BIOS it prints no such line.
    const consoleLines = run.events.flatMap((e) => (e.kind === 'vm.console' && e.node === 'node1' ? [e.line] : []));
    t.is(consoleLines.filter((line) => /efi: EFI v[\d.]+ by EDK II/.test(line)).length, 2);
    // The firmware ran the fixture's GRUB EFI image, which reads the syslinux configuration as RHCOS's does.
    t.true(consoleLines.some((line) => /fixture-grub: loading \/syslinux\/syslinux\.cfg/.test(line)));

    // (native-refused) refused: rpm-ostree read the manifest, refused the image before any import, and stayed on v1
    const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [`${e.node} ${e.reason}`] : []));
    t.is(failures.length, 1, failures.join('\n'));
    t.regex(failures[0]!, /^refused .*error: .*Target image does not have ostree\.bootable label/);
    t.deepEqual(bootedVersions(run.events, 'refused'), ['1']);
    const refused = run.events.flatMap((e) => (e.kind === 'vm.console' && e.node === 'refused' ? [e.line] : []));
    t.true(refused.some((line) => line.includes('Pulling manifest: ostree-unverified-registry:')));
    t.false(
      refused.some((line) => line.includes('Importing: ')),
      'refused before the import',
    );
    t.deepEqual(leftoverDomains('mirror'), []);
  },
);
