import test from 'ava';
import { generateIgnition } from '../../src/ignition/generate.js';
import { decodeDataUrl, type IgnitionConfig } from '../../src/ignition/render.js';
import { UPDATE_UNITS } from '../../src/ignition/report-script.js';
import { runIgnitionValidate } from '../../src/ignition/validate.js';

const IMAGE = `10.0.2.2:5000/devpivot/fixture-2@sha256:${'c'.repeat(64)}`;
const MCO = `10.0.2.2:5000/devpivot/mco@sha256:${'d'.repeat(64)}`;

type File = { path: string; mode?: number; contents?: { source?: string } };
type Unit = { name: string; enabled?: boolean; contents?: string; dropins?: Array<{ name: string; contents: string }> };
const files = (config: IgnitionConfig) => (config.storage as { files?: File[] }).files ?? [];
const units = (config: IgnitionConfig) => (config.systemd as { units?: Unit[] }).units ?? [];
const file = (config: IgnitionConfig, path: string) => files(config).find((f) => f.path === path);
const text = (config: IgnitionConfig, path: string) => decodeDataUrl(file(config, path)?.contents?.source ?? '');

const config = () =>
  generateIgnition({
    driver: 'mcd',
    image: IMAGE,
    mcoImage: MCO,
    kernelArgs: ['ADD:console=ttyS0,115200', 'ADD:devpivot.mcd=1'],
    registry: { hostPort: '10.0.2.2:5000', insecure: true },
  });

test('mcd: the encapsulated MachineConfig as appendEncapsulated writes it (spec.config only a version)', (t) => {
  const mc = JSON.parse(text(config(), '/etc/ignition-machine-config-encapsulated.json') ?? 'null');
  t.is(mc.apiVersion, 'machineconfiguration.openshift.io/v1');
  t.is(mc.kind, 'MachineConfig');
  t.is(mc.metadata.name, 'rendered-worker-devpivot');
  t.is(mc.spec.osImageURL, IMAGE);
  t.deepEqual(mc.spec.kernelArguments, ['console=ttyS0,115200', 'devpivot.mcd=1']);
  t.deepEqual(mc.spec.config, { ignition: { version: '3.2.0' } });
  // The fields the MCD reads, with the Go types of MachineConfigSpec.
  t.is(typeof mc.spec.fips, 'boolean');
  t.is(mc.spec.kernelType, '');
  t.is(mc.spec.extensions, null);
});

test('mcd: a kubeconfig at /etc/kubernetes/kubeconfig (mode 420, as appendKubeConfig), naming no cluster', (t) => {
  // update() fails without it: updateKubeConfigPermission "Cannot stat /etc/kubernetes/kubeconfig" (MCO a57ca291
  // pkg/daemon/update.go:1669-1681); images/fixture/mco/machine-config-daemon does the same.
  const c = config();
  t.is(file(c, '/etc/kubernetes/kubeconfig')?.mode, 0o644);
  t.regex(text(c, '/etc/kubernetes/kubeconfig') ?? '', /^apiVersion: v1\nkind: Config\nclusters: \[\]\n/);
});

test('mcd: the pull secret is {} with the template mode 0600', (t) => {
  const c = config();
  t.is(text(c, '/var/lib/kubelet/config.json'), '{}\n');
  t.is(file(c, '/var/lib/kubelet/config.json')?.mode, 0o600);
});

test("mcd: the fixture's importer is told the node's ostree-ext predates the zstd reader (RHCOS 4.13)", (t) => {
  const c = config();
  t.is(text(c, '/etc/devpivot/ostree-ext'), '0.11\n');
  t.is(file(c, '/etc/devpivot/ostree-ext')?.mode, 0o644);
  // the other drivers' nodes read zstd: no such file
  for (const driver of ['rpm-ostree', 'bootc'] as const) {
    const other = generateIgnition({ driver, image: IMAGE, registry: { hostPort: '10.0.2.2:5000', insecure: true } });
    t.is(file(other, '/etc/devpivot/ostree-ext'), undefined, driver);
  }
});

test('mcd: the three release-4.13 units with the MCO image, console drop-ins, registry trust', (t) => {
  const c = config();
  const byName = new Map(units(c).map((u) => [u.name, u]));
  const pull = byName.get('machine-config-daemon-pull.service');
  const firstboot = byName.get('machine-config-daemon-firstboot.service');
  const target = byName.get('firstboot-osupdate.target');
  t.true(pull?.enabled && firstboot?.enabled && target?.enabled);
  t.true(
    pull?.contents?.includes(
      `ExecStart=/bin/sh -c "while ! /usr/bin/podman pull --authfile=/var/lib/kubelet/config.json '${MCO}'; do sleep 1; done"\n`,
    ),
  );
  t.true(pull?.contents?.includes('\n[Install]\nRequiredBy=machine-config-daemon-firstboot.service\n'));
  const execs = firstboot?.contents?.split('\n').filter((line) => line.startsWith('ExecStart=')) ?? [];
  t.deepEqual(execs, [
    `ExecStart=/usr/bin/podman run --rm --privileged --net=host -v /:/rootfs  --entrypoint machine-config-daemon '${MCO}' firstboot-complete-machineconfig --maybe-persist-nics`,
    `ExecStart=/usr/bin/podman run --rm --privileged --pid=host --net=host -v /:/rootfs  --entrypoint machine-config-daemon '${MCO}' firstboot-complete-machineconfig`,
  ]);
  t.regex(firstboot?.contents ?? '', /^ConditionPathExists=\/etc\/ignition-machine-config-encapsulated\.json$/m);
  t.regex(target?.contents ?? '', /\nRequires=basic\.target\n\n\[Install\]\nWantedBy=default\.target\n$/);
  for (const name of ['machine-config-daemon-pull.service', 'machine-config-daemon-firstboot.service']) {
    t.regex(byName.get(name)?.dropins?.[0]?.contents ?? '', /StandardOutput=journal\+console/, name);
  }
  t.truthy(byName.get('ostree-finalize-staged.service')?.dropins?.length);
  t.truthy(file(c, '/etc/containers/registries.conf.d/50-devpivot.conf'));
  t.true(UPDATE_UNITS.includes('machine-config-daemon-firstboot.service'));
  t.true(UPDATE_UNITS.includes('machine-config-daemon-pull.service'));
  t.regex(byName.get('devpivot-report.service')?.contents ?? '', /^Before=.*machine-config-daemon-firstboot\.service/m);
});

test('mcd: ignition-validate accepts it', async (t) => {
  const result = await runIgnitionValidate(config());
  t.true(result.checked, 'ignition-validate must be installed');
  t.true(result.ok, result.output);
});

test('mcd: refused without an MCO image, with a quote in it, or with a kernel argument to delete', (t) => {
  const base = { driver: 'mcd' as const, image: IMAGE, registry: { hostPort: '10.0.2.2:5000', insecure: true } };
  t.is(t.throws(() => generateIgnition(base))?.message, 'the mcd driver needs an MCO image');
  t.regex(t.throws(() => generateIgnition({ ...base, mcoImage: "x'; rm -rf /" }))?.message ?? '', /invalid MCO image/);
  const error = t.throws(() => generateIgnition({ ...base, mcoImage: MCO, kernelArgs: ['DELETE:quiet'] }));
  t.is((error as { code?: string }).code, 'IGNITION_KERNEL_ARG');
});
