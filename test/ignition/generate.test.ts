import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { execa } from 'execa';
import { DRIVERS, pivotDrivers } from '../../src/drivers/index.js';
import { makeHostKeys } from '../../src/engine/host-keys.js';
import { generateIgnition, type IgnitionOptions } from '../../src/ignition/generate.js';
import { mergeSpec3 } from '../../src/ignition/merge.js';
import { decodeDataUrl, type IgnitionConfig } from '../../src/ignition/render.js';
import { SPEC_VERSIONS } from '../../src/ignition/spec.js';
import { runIgnitionValidate, validateSpec2 } from '../../src/ignition/validate.js';

const IMAGE = `10.0.2.2:5000/devpivot/os@sha256:${'c'.repeat(64)}`;
const MCO_IMAGE = `10.0.2.2:5000/devpivot/mco@sha256:${'d'.repeat(64)}`;
const CA = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUdevpivot\n-----END CERTIFICATE-----\n';

type File = { path: string; mode?: number; contents?: { source?: string } };
type Unit = { name: string; enabled?: boolean; contents?: string; dropins?: Array<{ name: string; contents: string }> };
const files = (config: IgnitionConfig) => (config.storage as { files?: File[] } | undefined)?.files ?? [];
const units = (config: IgnitionConfig) => (config.systemd as { units?: Unit[] } | undefined)?.units ?? [];
const fileText = (config: IgnitionConfig, path: string) => {
  const file = files(config).find((f) => f.path === path);
  return file?.contents?.source === undefined ? undefined : decodeDataUrl(file.contents.source);
};

const full = (driver: IgnitionOptions['driver'], spec: string): IgnitionOptions => ({
  driver,
  image: IMAGE,
  spec,
  registry: { hostPort: '10.0.2.2:5000', insecure: true, caPem: CA },
  kernelArgs:
    driver === 'bootc'
      ? []
      : driver === 'mcd'
        ? ['ADD:console=ttyS0,115200']
        : ['ADD:console=ttyS0,115200', 'DELETE:quiet'],
  ...(driver === 'mcd' ? { mcoImage: MCO_IMAGE } : {}),
  sshKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDevpivotTestKey test@devpivot'],
  hostname: 'node-1',
});

for (const driver of pivotDrivers()) {
  for (const spec of SPEC_VERSIONS) {
    test(`${driver} × spec ${spec} is valid (${spec.startsWith('2') ? "devpivot's 2.2 rules" : 'ignition-validate'})`, async (t) => {
      const config = generateIgnition(full(driver, spec));
      t.is(config.ignition.version, spec);
      if (spec.startsWith('2')) {
        t.deepEqual(validateSpec2(config), []);
        t.true(files(config).every((f) => (f as { filesystem?: string }).filesystem === 'root'));
      } else {
        const result = await runIgnitionValidate(config);
        t.true(result.checked, 'ignition-validate must be installed');
        t.true(result.ok, result.output);
        t.is(result.output, '');
      }
    });
  }
}

test('legacy: the pullspec by digest, kernel-args lines, console drop-in on pivot.service', (t) => {
  const config = generateIgnition(full('legacy', '3.3.0'));
  t.is(fileText(config, '/etc/pivot/image-pullspec'), `${IMAGE}\n`);
  t.is(fileText(config, '/etc/pivot/kernel-args'), 'ADD console=ttyS0,115200\nDELETE quiet\n');
  const pivot = units(config).find((u) => u.name === 'pivot.service');
  t.is(pivot?.contents, undefined);
  t.regex(pivot?.dropins?.[0]?.contents ?? '', /StandardOutput=journal\+console/);
  const error = t.throws(() => generateIgnition({ driver: 'legacy', image: '10.0.2.2:5000/os:latest' }));
  t.is((error as { code?: string }).code, 'IGNITION_IMAGE_NOT_PINNED');
});

test('legacy: mcd-write-pivot-reboot.service exactly as the 4.1-4.5 machine-config server wrote it', (t) => {
  for (const spec of ['2.2.0', '3.3.0']) {
    const config = generateIgnition(full('legacy', spec));
    const unit = units(config).find((u) => u.name === 'mcd-write-pivot-reboot.service');
    t.true(unit?.enabled);
    // transcribed from openshift/machine-config-operator release-4.5 pkg/server/server.go appendInitialPivot
    t.is(
      unit?.contents,
      "[Unit]\nBefore=pivot.service\nConditionFirstBoot=true\n[Service]\nExecStart=/bin/sh -c 'mkdir /run/pivot && touch /run/pivot/reboot-needed'\n[Install]\nWantedBy=multi-user.target\n",
    );
    // the staged deployment is written at shutdown: its unit's output goes to the console too
    const finalize = units(config).find((u) => u.name === 'ostree-finalize-staged.service');
    t.regex(finalize?.dropins?.[0]?.contents ?? '', /StandardOutput=journal\+console/);
  }
  for (const driver of ['rpm-ostree', 'bootc'] as const) {
    t.false(units(generateIgnition(full(driver, '3.3.0'))).some((u) => u.name === 'mcd-write-pivot-reboot.service'));
  }
});

test('rpm-ostree and bootc: a oneshot unit that rebases / switches, then reboots, once', (t) => {
  const rebase = units(generateIgnition(full('rpm-ostree', '3.0.0'))).find((u) => u.name === 'devpivot-rebase.service');
  t.true(rebase?.enabled);
  t.regex(
    rebase?.contents ?? '',
    new RegExp(
      `^ExecStart=/usr/bin/rpm-ostree rebase --experimental ostree-unverified-registry:${IMAGE.replace(/[.]/g, '\\.')}$`,
      'm',
    ),
  );
  t.regex(
    rebase?.contents ?? '',
    /^ExecStart=\/usr\/bin\/rpm-ostree kargs --append=console=ttyS0,115200 --delete=quiet$/m,
  );
  t.regex(rebase?.contents ?? '', /^Type=oneshot$/m);
  t.regex(rebase?.contents ?? '', /ExecStart=\/usr\/bin\/systemctl reboot\n/);
  t.regex(rebase?.contents ?? '', /^ConditionPathExists=!\/var\/lib\/devpivot\/pivot-started$/m);
  const sw = units(generateIgnition(full('bootc', '3.0.0'))).find((u) => u.name === 'devpivot-switch.service');
  // bootc's progress on a FIFO, relayed to the console (drivers/bootc.ts switchWithProgress).
  t.regex(
    sw?.contents ?? '',
    new RegExp(
      `^ExecStart=/bin/sh -c '.*/usr/bin/bootc switch --progress-fd 3 ${IMAGE.replace(/[.]/g, '\\.')} 3>\\$\\$p;`,
      'm',
    ),
  );
  const error = t.throws(() => generateIgnition({ ...full('bootc', '3.0.0'), kernelArgs: ['ADD:x'] }));
  t.is((error as { code?: string }).code, 'IGNITION_KERNEL_ARG');
});

test('rpm-ostree and bootc: Zincati is told not to update (kola on FCOS); legacy RHCOS has no Zincati', (t) => {
  const path = '/etc/zincati/config.d/90-disable-auto-updates.toml';
  for (const driver of ['rpm-ostree', 'bootc'] as const) {
    for (const spec of ['2.2.0', '3.3.0']) {
      const config = generateIgnition(full(driver, spec));
      t.is(fileText(config, path), '[updates]\nenabled = false\n', `${driver} ${spec}`);
      t.is(files(config).find((f) => f.path === path)?.mode, 0o644);
    }
  }
  t.is(fileText(generateIgnition(full('legacy', '3.3.0')), path), undefined);
});

test('registry trust, report unit, ssh keys and hostname', async (t) => {
  const config = generateIgnition(full('rpm-ostree', '3.3.0'));
  t.is(
    fileText(config, '/etc/containers/registries.conf.d/50-devpivot.conf'),
    '# devpivot: the local registry serves plain HTTP\n[[registry]]\nlocation = "10.0.2.2:5000"\ninsecure = true\n',
  );
  t.is(fileText(config, '/etc/containers/certs.d/10.0.2.2:5000/ca.crt'), CA);
  t.is(fileText(config, '/etc/hostname'), 'node-1\n');
  t.deepEqual((config.passwd as { users: unknown[] }).users, [
    { name: 'core', sshAuthorizedKeys: full('bootc', '').sshKeys },
  ]);
  const report = units(config).find((u) => u.name === 'devpivot-report.service');
  t.true(report?.enabled);
  const script = fileText(config, '/etc/devpivot/report.sh')!;
  t.is(files(config).find((f) => f.path === '/etc/devpivot/report.sh')?.mode, 0o755);
  await execa('sh', ['-n', '-c', script]);
  t.false(
    units(generateIgnition({ ...full('rpm-ostree', '3.3.0'), report: false })).some(
      (u) => u.name === 'devpivot-report.service',
    ),
  );
  t.is(fileText(config, '/etc/containers/registries.conf'), undefined);
  // Spec 2.2 guests (RHCOS 4.1-4.5) predate registries.conf.d: the v1 file names the insecure registry.
  const v1 = fileText(generateIgnition(full('legacy', '2.2.0')), '/etc/containers/registries.conf') ?? '';
  t.regex(v1, /^\[registries\.insecure\]\nregistries = \['10\.0\.2\.2:5000'\]$/m);
});

test('the report script prints the exact report line from `ostree admin status` output', async (t) => {
  // Run the real script with the real sh and awk; only `ostree` is replaced by a recorded status output,
  // since this host is not booted from ostree.
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-report-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const csum = 'd'.repeat(64);
  await writeFile(
    join(dir, 'ostree'),
    `#!/bin/sh\ncat <<'EOS'\n  rhcos ${'e'.repeat(64)}.0 (staged)\n    Version: 9.9\n* rhcos ${csum}.0\n    Version: 413.92.202311\n    origin refspec: pivot://x\n  rhcos ${'f'.repeat(64)}.0 (rollback)\n    Version: 1.0\nEOS\n`,
    { mode: 0o755 },
  );
  const config = generateIgnition(full('rpm-ostree', '3.3.0'));
  await writeFile(join(dir, 'report.sh'), fileText(config, '/etc/devpivot/report.sh')!);
  const { stdout } = await execa('sh', [join(dir, 'report.sh')], { env: { PATH: `${dir}:/usr/bin:/bin` } });
  const line = stdout.trim().split('\n')[0]!;
  t.regex(
    line,
    /^devpivot-report: \{"event":"booted","bootId":"[0-9a-f-]{36}","version":"413\.92\.202311","commit":"d{64}","image":""\}$/,
  );
  t.like(JSON.parse(line.slice('devpivot-report: '.length)), {
    event: 'booted',
    version: '413.92.202311',
    commit: csum,
  });
});

/** Run the generated report script with recorded tool outputs on PATH (this host has neither tool). */
async function runReport(t: ExecutionContext, tools: Record<string, string>) {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-report-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [name, output] of Object.entries(tools)) {
    await writeFile(join(dir, name), `#!/bin/sh\ncat <<'EOS'\n${output}\nEOS\n`, { mode: 0o755 });
  }
  await writeFile(
    join(dir, 'report.sh'),
    fileText(generateIgnition(full('legacy', '3.3.0')), '/etc/devpivot/report.sh')!,
  );
  const { stdout } = await execa('sh', [join(dir, 'report.sh')], { env: { PATH: `${dir}:/usr/bin:/bin` } });
  const line = stdout.trim().split('\n')[0]!;
  t.regex(line, /^devpivot-report: \{"event":"booted",.*\}$/);
  return JSON.parse(line.slice('devpivot-report: '.length)) as Record<string, string>;
}

test('the report script reads `rpm-ostree status --json`: the booted deployment, its pivot:// or image digest', async (t) => {
  const csum = 'a'.repeat(64);
  const legacy = `pivot://quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:${'4'.repeat(64)}`;
  // The shape of rpm-ostree's output (pretty-printed; deployments default first, nested values around the keys).
  const pretty = (booted: Record<string, unknown>) =>
    JSON.stringify(
      {
        deployments: [
          { id: 'rhcos-b.0', checksum: 'b'.repeat(64), version: '42.81.2', booted: false, staged: true },
          { id: 'rhcos-a.0', 'requested-packages': [], checksum: csum, booted: true, ...booted, pinned: false },
        ],
        transaction: null,
        'cached-update': null,
      },
      null,
      2,
    );
  const fromPivot = await runReport(t, {
    'rpm-ostree': pretty({ version: '42.80.1', 'custom-origin': [legacy, 'Managed by pivot tool'] }),
  });
  t.like(fromPivot, { version: '42.80.1', commit: csum, image: legacy.slice('pivot://'.length) });
  const native = await runReport(t, {
    'rpm-ostree': pretty({
      version: '418.94.2025',
      'container-image-reference': 'ostree-unverified-registry:quay.io/openshift/os:4.18',
      'container-image-reference-digest': `sha256:${'9'.repeat(64)}`,
    }),
  });
  t.like(native, { version: '418.94.2025', commit: csum, image: `quay.io/openshift/os@sha256:${'9'.repeat(64)}` });
});

test('the report script prefers `bootc status --json`: booted image by digest, version, ostree checksum', async (t) => {
  const status = {
    apiVersion: 'org.containers.bootc/v1',
    kind: 'BootcHost',
    status: {
      staged: null,
      booted: {
        image: {
          image: { image: 'localhost:5000/fedora-bootc:41', transport: 'registry' },
          version: '41.20250101.0',
          timestamp: null,
          imageDigest: `sha256:${'7'.repeat(64)}`,
        },
        ostree: { checksum: 'c'.repeat(64), deploySerial: 0 },
      },
    },
  };
  const report = await runReport(t, { bootc: JSON.stringify(status), 'rpm-ostree': '{"deployments":[]}' });
  t.like(report, {
    version: '41.20250101.0',
    commit: 'c'.repeat(64),
    image: `localhost:5000/fedora-bootc@sha256:${'7'.repeat(64)}`,
  });
});

test('merging a user config: files by path, units by name, users by name, child wins', async (t) => {
  const extra = {
    ignition: { version: '3.2.0' },
    storage: {
      files: [{ path: '/etc/hostname', overwrite: true, contents: { source: 'data:,mine%0A' } }],
      links: [{ path: '/etc/pivot/kernel-args', target: '/dev/null' }],
    },
    systemd: {
      units: [
        { name: 'pivot.service', dropins: [{ name: '20-user.conf', contents: '[Service]\nEnvironment=X=1\n' }] },
        {
          name: 'user.service',
          enabled: true,
          contents: '[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n',
        },
      ],
    },
    passwd: { users: [{ name: 'core', sshAuthorizedKeys: ['ssh-rsa AAAAB3user user'] }, { name: 'ops' }] },
  };
  const config = generateIgnition({ ...full('legacy', '3.2.0'), spec: undefined, extra });
  t.is(config.ignition.version, '3.2.0'); // raised from the default to the user's version
  t.is(fileText(config, '/etc/hostname'), 'mine\n');
  t.is(fileText(config, '/etc/pivot/kernel-args'), undefined); // replaced by the user's link
  t.is(fileText(config, '/etc/pivot/image-pullspec'), `${IMAGE}\n`);
  const pivot = units(config).find((u) => u.name === 'pivot.service');
  t.deepEqual(
    pivot?.dropins?.map((d) => d.name),
    ['10-devpivot-console.conf', '20-user.conf'],
  );
  t.true(units(config).some((u) => u.name === 'user.service'));
  const users = (config.passwd as { users: Array<{ name: string; sshAuthorizedKeys?: string[] }> }).users;
  t.deepEqual(
    users.map((u) => u.name),
    ['core', 'ops'],
  );
  t.is(users[0]!.sshAuthorizedKeys!.length, 2);
  const result = await runIgnitionValidate(config);
  t.true(result.ok, result.output);

  // Same-name drop-ins merge too: the child's contents win.
  const merged = mergeSpec3(
    { systemd: { units: [{ name: 'a.service', dropins: [{ name: 'x.conf', contents: 'A' }] }] } },
    { systemd: { units: [{ name: 'a.service', dropins: [{ name: 'x.conf', contents: 'B' }] }] } },
  );
  t.deepEqual(merged, { systemd: { units: [{ name: 'a.service', dropins: [{ name: 'x.conf', contents: 'B' }] }] } });
});

test('spec choice: explicit, raised by the extra config, or refused', (t) => {
  t.is(generateIgnition({ driver: 'bootc', image: 'r:1/x:y' }).ignition.version, '3.0.0');
  const extra33 = { ignition: { version: '3.3.0' } };
  const error = t.throws(() => generateIgnition({ driver: 'bootc', image: 'r:1/x:y', spec: '3.1.0', extra: extra33 }));
  t.is((error as { code?: string }).code, 'IGNITION_SPEC_MISMATCH');
  const major = t.throws(() => generateIgnition({ driver: 'bootc', image: 'r:1/x:y', spec: '2.2.0', extra: extra33 }));
  t.is((major as { code?: string }).code, 'IGNITION_SPEC_MISMATCH');
  const unsupported = t.throws(() => generateIgnition({ driver: 'bootc', image: 'r:1/x:y', spec: '3.4.0' }));
  t.is((unsupported as { code?: string }).code, 'IGNITION_SPEC');
  // Spec 2: the user's 2.x config is appended (lists concatenated).
  const v2 = generateIgnition({
    driver: 'legacy',
    image: IMAGE,
    extra: {
      ignition: { version: '2.2.0' },
      storage: { files: [{ filesystem: 'root', path: '/etc/motd', contents: { source: 'data:,hi' }, mode: 420 }] },
    },
  });
  t.is(v2.ignition.version, '2.2.0');
  t.deepEqual(
    files(v2).map((f) => f.path),
    ['/etc/pivot/image-pullspec', '/etc/devpivot/report.sh', '/etc/motd'],
  );
  t.deepEqual(validateSpec2(v2), []);
});

test('validateSpec2 reports what breaks the 2.2 rules', (t) => {
  const errors = validateSpec2({
    ignition: { version: '2.2.0' },
    storage: { files: [{ path: 'relative', mode: 0o10000, contents: { source: 'data:,a b' } }] },
    systemd: { units: [{ name: 'nosuffix', contents: 'ExecStart=/bin/true', dropins: [{ name: 'x.txt' }] }] },
    passwd: { users: [{ name: '' }] },
    kernelArguments: {},
  });
  t.deepEqual(errors.sort(), [
    'config.kernelArguments: not in spec 2.2.0',
    'passwd.users[0].name: required',
    'storage.files[0].filesystem: required',
    'storage.files[0].mode: must be an integer permission (decimal JSON, e.g. 420 for 0644)',
    'storage.files[0].path: must be absolute',
    'systemd.units[0].contents: line 1 is outside a [section]',
    'systemd.units[0].dropins[0].name: must end in .conf',
    'systemd.units[0].name: must be a unit name with a valid type suffix',
  ]);
  t.deepEqual(validateSpec2({ ignition: { version: '3.0.0' } }), ['ignition.version: must be "2.2.0"']);
});

test('a node without a target: the boot report, trust and access, no update units; valid', async (t) => {
  const { image: _image, ...rest } = full('legacy', '3.3.0');
  const config = generateIgnition(rest);
  t.is(fileText(config, '/etc/pivot/image-pullspec'), undefined);
  t.false(units(config).some((u) => u.name === 'pivot.service' || u.name === 'mcd-write-pivot-reboot.service'));
  t.truthy(fileText(config, '/etc/devpivot/report.sh'));
  t.true(units(config).some((u) => u.name === 'devpivot-report.service' && u.enabled === true));
  const result = await runIgnitionValidate(config);
  t.true(result.checked && result.ok, result.output);
});

test("host keys: each type's private key at sshd-keygen's path (0600) and its public key (0644); valid in spec 2.2 and 3.x", async (t) => {
  const hostKeys = await makeHostKeys();
  for (const [driver, spec] of [
    ['legacy', '2.2.0'],
    ['bootc', '3.3.0'],
  ] as const) {
    const config = generateIgnition({ ...full(driver, spec), hostKeys });
    for (const key of hostKeys) {
      const path = `/etc/ssh/ssh_host_${key.type}_key`;
      t.is(fileText(config, path), key.privateKey, `${spec} ${path}`);
      t.is(files(config).find((f) => f.path === path)?.mode, 0o600);
      t.is(fileText(config, `${path}.pub`), `${key.publicKey}\n`);
      t.is(files(config).find((f) => f.path === `${path}.pub`)?.mode, 0o644);
    }
    if (spec === '2.2.0') t.deepEqual(validateSpec2(config), []);
    else {
      const result = await runIgnitionValidate(config);
      t.true(result.checked && result.ok, `${spec}: ${result.output}`);
    }
  }
  t.false(JSON.stringify(generateIgnition(full('bootc', '3.3.0'))).includes('ssh_host_'), 'none unless given');
});

// systemd expands `%x` specifiers in Exec lines (systemd.unit(5) "Specifiers"): a literal `%` must be written `%%`,
// or `printf "%s"` in a unit prints the user's shell instead of its argument.
test('every generated unit writes a literal % in its Exec lines as %% (no systemd specifier by accident)', (t) => {
  for (const driver of pivotDrivers()) {
    const config = generateIgnition(full(driver, DRIVERS[driver].specs.default));
    for (const unit of units(config)) {
      const texts = [unit.contents ?? '', ...(unit.dropins ?? []).map((d) => d.contents)];
      for (const line of texts.flatMap((text) => text.split('\n')).filter((l) => /^Exec[A-Za-z]*=/.test(l)))
        t.notRegex(line.replaceAll('%%', ''), /%/, `${driver} ${unit.name}: ${line}`);
    }
  }
});
