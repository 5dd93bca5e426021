import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test.serial('mcd-firstboot: the MCD firstboot units rebase v1 to the legacy v2 of the MachineConfig', async (t) => {
  const run = await runScenarioCli('mcd-firstboot');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(run.steps, [
    '✓ prepare',
    '✓ up',
    '✓ expect node1 ignition within 3m',
    '✓ expect node1 console /daemon.go:\\d+\\] assuming we can use container binary chroot\\(\\) to host/ within 5m',
    '✓ expect node1 console /daemon.go:\\d+\\] rpm-ostree has container feature/ within 3m',
    '✓ expect node1 pivot.pulling within 3m',
    '✓ expect node1 pivot.staged within 8m',
    '✓ expect node1 console /initiating reboot: Completing firstboot provisioning to rendered-worker-devpivot/ within 3m',
    '✓ expect node1 booted fixture:2 within 5m',
    '✓ assert node1 booted fixture:2 reboots=1 failed=false',
    "✓ ssh node1 'test ! -e /etc/ignition-machine-config-encapsulated.json ...' =~ /rendered-worker-devpivot[\\s\\S]*devpivot\\.mcd=1/ within 3m",
  ]);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  // The MCO image was pushed next to the oscontainer, and the units pulled it by digest.
  const pushed = run.events.flatMap((e) => (e.kind === 'image.pushed' ? [e.ref] : []));
  t.true(
    pushed.some((ref) => /\/devpivot-fixture\/mco@sha256:[0-9a-f]{64}$/.test(ref)),
    pushed.join(', '),
  );
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
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
  t.deepEqual(leftoverDomains('mcd-firstboot'), []);
});
