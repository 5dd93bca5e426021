/**
 * scenarios/early-pivot-three-nodes.yaml end to end: three mcd workers pivot on first boot through one pull-through
 * cache. A loopback distribution registry plays quay.io (the shipped file's `upstream:` port is replaced by a
 * counting proxy in front of it) and holds fixture v2 under openshift-release-dev/. The run gets a state directory
 * of its own, so the embedded registry starts with an empty store: every blob of v2 must come from the upstream,
 * and exactly once, although three guests pull it.
 *
 * It also carries four-nodes.vm.test.ts's checks (several nodes pivoting at once from one registry, each pull
 * attributed to its node by the port it came in on), which needed four more TCG guests for the same attribution
 * code: here on three. scenarios/four-nodes.yaml stays for `bench:pivot`.
 *
 * And mcd-firstboot.vm.test.ts's (a node that booted the same v1 and made the same MCD firstboot update to the
 * legacy v2): worker-0's MCD firstboot units rebase v1 to the legacy v2 of the MachineConfig, line by line.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import { loadFixture } from '../../src/fixture/fixture.js';
import { buildAndPush } from '../../src/oscontainer/index.js';
import { repoRoot } from '../helpers/cli.js';
import { type DockerRegistry, imageBlobs, startDockerRegistry } from '../oscontainer/docker-registry.js';
import { type CountingProxy, startCountingProxy } from '../registry/upstream.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

const REPOSITORY = 'openshift-release-dev/devpivot-fixture';
const NODES = ['worker-0', 'worker-1', 'worker-2'];

let dir: string;
let upstream: DockerRegistry;
let proxy: CountingProxy;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-three-nodes-vm-'));
  upstream = await startDockerRegistry();
  proxy = await startCountingProxy(`http://${upstream.hostPort}`);
});

test.after.always(async () => {
  await proxy?.close();
  await upstream?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test.serial(
  'early-pivot-three-nodes: three mcd workers pivot through one cache, each blob fetched upstream once',
  async (t) => {
    t.timeout(40 * 60_000);
    const fixture = await loadFixture();
    const v2 = fixture.versions.find((entry) => entry.version === '2')!;
    // Straight into the upstream, not through the proxy: the proxy counts only what devpivot's registry fetches.
    const pushed = await buildAndPush({
      repo: fixture.repo,
      commit: v2.commit,
      target: `${upstream.hostPort}/${REPOSITORY}:2`,
    });
    const { manifest, blobs } = await imageBlobs(upstream.hostPort, REPOSITORY, pushed.digest);

    const shipped = await readFile(`${repoRoot}scenarios/early-pivot-three-nodes.yaml`, 'utf8');
    t.regex(shipped, /upstream: http:\/\/127\.0\.0\.1:5999\n/);
    t.regex(shipped, /prefetch: false/);
    const file = join(dir, 'early-pivot-three-nodes.yaml');
    await writeFile(file, shipped.replace('http://127.0.0.1:5999', proxy.url));

    const run = await runScenarioCli('three-nodes', {
      file,
      timeoutMs: 38 * 60_000,
      env: { DEVPIVOT_STATE_DIR: join(dir, 'state') },
    });
    t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
    const image = `quay.io/${REPOSITORY}@${pushed.digest}`;
    for (const node of NODES) {
      t.deepEqual(bootedVersions(run.events, node), ['1', '2'], node);
      const booted = run.events.flatMap((e) => (e.kind === 'guest.booted' && e.node === node ? [e.image] : []));
      t.is(booted[1], image, `${node} booted the upstream name, by digest`);
    }

    // Upstream: the tag resolved once, the manifest by digest once, each blob once — nothing else.
    const blobGets = proxy.requests.filter((r) => r.startsWith(`GET /v2/${REPOSITORY}/blobs/`));
    t.deepEqual([...blobGets].sort(), blobs.map((digest) => `GET /v2/${REPOSITORY}/blobs/${digest}`).sort());
    t.is(proxy.count('GET', `/v2/${REPOSITORY}/manifests/2`), 1);
    t.is(proxy.count('GET', `/v2/${REPOSITORY}/manifests/${pushed.digest}`), 1);
    const stored = run.events.flatMap((e) =>
      e.kind === 'registry.upstream' ? [`${e.what} ${e.digest} ${e.outcome}`] : [],
    );
    t.deepEqual(
      stored.sort(),
      [...blobs.map((digest) => `blob ${digest} stored`), `manifest ${pushed.digest} stored`].sort(),
    );
    // prefetch: false: nothing was copied ahead, every layer reached the cache after the nodes had started.
    const started = run.events.findIndex((e) => e.kind === 'vm.started');
    for (const layer of manifest.layers) {
      const fetched = run.events.findIndex(
        (e) => e.kind === 'registry.upstream' && e.what === 'blob' && e.digest === layer.digest,
      );
      t.true(started >= 0 && fetched > started, `${layer.digest} fetched upstream after the nodes started`);
    }
    t.false(
      run.events.some((e) => e.kind === 'image.pulled'),
      'nothing pulled ahead',
    );
    // ...yet every layer reached all three guests whole, from the embedded registry.
    for (const layer of manifest.layers) {
      const served = run.events.filter(
        (e) =>
          e.kind === 'registry.request' &&
          e.method === 'GET' &&
          e.path === `/v2/${REPOSITORY}/blobs/${layer.digest}` &&
          e.status === 200 &&
          e.bytes === layer.size,
      );
      t.true(served.length >= NODES.length, `${layer.digest} served whole ${served.length} times`);
      t.log(
        `layer ${layer.digest.slice(7, 19)} (${(layer.size / 1048576).toFixed(1)} MiB): upstream GETs ${proxy.count('GET', `/v2/${REPOSITORY}/blobs/${layer.digest}`)}, served whole to guests ${served.length}`,
      );
    }
    // (four-nodes) Per-node attribution: every blob.progress of the oscontainer a guest caused names its node, and
    // each node's finished series cover the image's blobs (config and layers), each layer downloaded once, the
    // distinct blobs adding up to the image's size. The MCD inspects the image before it pulls it (imageInspect),
    // so a node reads the config twice; devpivot's own read of it (prefetch: false) came on the main port: no node.
    const parts = [manifest.config, ...manifest.layers];
    const size = parts.reduce((sum, blob) => sum + blob.size, 0);
    const progress = run.events.filter(
      (e): e is Stamped<EventOf<'blob.progress'>> => e.kind === 'blob.progress' && e.repository === REPOSITORY,
    );
    t.deepEqual(
      [...new Set(progress.flatMap((e) => (e.node ? [e.node] : [])))].sort(),
      NODES,
      'blob.progress carries the node names',
    );
    t.deepEqual(
      [...new Set(progress.filter((e) => e.node === undefined).map((e) => e.digest))],
      [manifest.config.digest],
      "only devpivot's own read of the config came on the main port",
    );
    for (const node of NODES) {
      const finished = progress.filter((e) => e.node === node && e.sent === e.total);
      const distinct = new Map(finished.map((e) => [e.digest, e.total]));
      const bytes = [...distinct.values()].reduce((sum, total) => sum + total, 0);
      t.log(`${node}: ${finished.length} finished series, ${bytes} bytes; image ${parts.length} blobs, ${size} bytes`);
      t.deepEqual([...distinct.keys()].sort(), parts.map((blob) => blob.digest).sort(), node);
      for (const layer of manifest.layers)
        t.is(finished.filter((e) => e.digest === layer.digest).length, 1, `${node} downloaded ${layer.digest} once`);
      t.is(bytes, size, `${node}'s blobs add up to the image size`);
    }
    // The request log names the same nodes: each GET of the manifest by a guest came in on its own port.
    const manifestGets = run.events.filter(
      (e): e is Stamped<EventOf<'registry.request'>> =>
        e.kind === 'registry.request' &&
        e.method === 'GET' &&
        e.path === `/v2/${REPOSITORY}/manifests/${pushed.digest}` &&
        e.status === 200,
    );
    for (const node of NODES)
      t.true(
        manifestGets.some((e) => e.node === node),
        `${node} fetched the manifest`,
      );
    const blocked = run.events.filter(
      (e) => e.kind === 'log' && /tried to reach .*: blocked/.test(e.message) && !/reach ipv6:/.test(e.message),
    );
    t.deepEqual(blocked, [], 'each node reached its own port, and nothing blocked it');

    // (mcd-firstboot) worker-0's steps, then the daemon's own lines on its console
    t.deepEqual(
      run.steps.filter((step) => step.includes(' worker-0 ')),
      [
        '✓ expect worker-0 ignition within 5m',
        '✓ expect worker-0 console /daemon.go:\\d+\\] assuming we can use container binary chroot\\(\\) to host/ within 5m',
        '✓ expect worker-0 console /daemon.go:\\d+\\] rpm-ostree has container feature/ within 3m',
        '✓ expect worker-0 pivot.pulling within 5m',
        '✓ expect worker-0 pivot.staged within 12m',
        '✓ expect worker-0 console /initiating reboot: Completing firstboot provisioning to rendered-worker-devpivot/ within 3m',
        '✓ expect worker-0 booted v2 within 20m',
        '✓ assert worker-0 booted v2 reboots=1 failed=false',
        "✓ ssh worker-0 'test ! -e /etc/ignition-machine-config-encapsulated.json ...' =~ /rendered-worker-devpivot[\\s\\S]*devpivot\\.mcd=1/ within 3m",
      ],
    );
    // The MCO image was pushed next to the oscontainer, and the units pulled it by digest.
    const pushedRefs = run.events.flatMap((e) => (e.kind === 'image.pushed' ? [e.ref] : []));
    t.true(
      pushedRefs.some((ref) => /\/devpivot-fixture\/mco@sha256:[0-9a-f]{64}$/.test(ref)),
      pushedRefs.join(', '),
    );
    const console = run.events.flatMap((e) => (e.kind === 'vm.console' && e.node === 'worker-0' ? [e.line] : []));
    const has = (pattern: RegExp) =>
      t.true(
        console.some((line) => pattern.test(line)),
        String(pattern),
      );
    // The daemon's own lines, in glog's format, from the re-executed copy in the host.
    has(/I\d{4} [\d:.]+ +\d+ daemon\.go:482\] assuming we can use container binary chroot\(\) to host/);
    has(/daemon\.go:262\] Booted osImageURL: fixture\.invalid\/fixture-coreos@sha256:[0-9a-f]{64} \(1\)/);
    has(/rpm-ostree\.go:85\] Enabled workaround for bug 2111817/);
    has(/update\.go:498\] Starting update from mco-empty-mc to rendered-worker-devpivot: &\{osUpdate:true kargs:true/);
    // update() needs the kubeconfig devpivot's Ignition writes (updateKubeConfigPermission, MCO a57ca291 update.go:1669)
    has(/update\.go:1670\] updating the permission of the kubeconfig to: 0o600/);
    // no oc in the fixture: RunExtBackground's three tries, then the podman fallback
    has(
      /run\.go:19\] Running: nice -- ionice -c 3 oc image extract -v 10 --path \/:\/run\/mco-machine-os-content\/os-content-/,
    );
    has(/run\.go:19\] Running: nice -- ionice -c 3 podman pull -q --authfile \/var\/lib\/kubelet\/config\.json /);
    has(/update\.go:289\] Falling back to using podman cp to fetch OS image content/);
    has(/rpm-ostree\.go:240\] Pivoting to: 2 \([0-9a-f]{64}\)/);
    has(
      /Running: rpm-ostree rebase --experimental \S+\/srv\/repo:[0-9a-f]{64} --custom-origin-url pivot:\/\/\S+ --custom-origin-description Managed by machine-config-operator/,
    );
    has(/update\.go:1030\] Running rpm-ostree \[kargs --append=devpivot\.mcd=1\]/);
    t.false(
      console.some((line) => /firstboot_complete_machineconfig\.go:65\] error:/.test(line)),
      'no retried error',
    );
    t.deepEqual(leftoverDomains('three-nodes'), []);
  },
);
