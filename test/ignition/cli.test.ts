import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { runIgnitionValidate } from '../../src/ignition/validate.js';
import { runCli } from '../helpers/cli.js';

const IMAGE = `10.0.2.2:5000/devpivot/os@sha256:${'a'.repeat(64)}`;
let dir: string;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-test-igncli-'));
});
test.after.always(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('devpivot ignition prints a valid, pretty config with the options applied', async (t) => {
  await writeFile(join(dir, 'id.pub'), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFile file@key\n');
  const result = await runCli([
    'ignition',
    '--driver',
    'rpm-ostree',
    '--image',
    IMAGE,
    '--spec',
    '3.3.0',
    '--insecure-registry',
    '10.0.2.2:5000',
    '--ssh-key',
    join(dir, 'id.pub'),
    '--ssh-key',
    'ssh-rsa AAAAB3inline inline',
    '--hostname',
    'n1',
    '--kernel-arg',
    'ADD:nosmt',
  ]);
  t.is(result.code, 0, result.stderr);
  t.true(result.stdout.startsWith('{\n  "ignition": {\n    "version": "3.3.0"'));
  const config = JSON.parse(result.stdout);
  t.deepEqual(config.passwd.users[0].sshAuthorizedKeys, [
    'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFile file@key',
    'ssh-rsa AAAAB3inline inline',
  ]);
  t.true((await runIgnitionValidate(config)).ok);
});

test('an invalid user file is IGNITION_INVALID quoting ignition-validate', async (t) => {
  await writeFile(
    join(dir, 'bad.ign'),
    JSON.stringify({ ignition: { version: '3.1.0' }, storage: { files: [{ path: 'relative/path' }] } }),
  );
  const result = await runCli(['ignition', '--driver', 'legacy', '--image', IMAGE, '--ignition', join(dir, 'bad.ign')]);
  t.is(result.code, 2);
  t.regex(
    result.stderr,
    /error\[IGNITION_INVALID\]: Ignition config .*bad\.ign is not a valid Ignition config; ignition-validate says:/,
  );
  t.regex(result.stderr, /path not absolute/);
  await writeFile(join(dir, 'notjson.ign'), '{"ignition": ');
  const syntax = await runCli(['ignition', '--image', IMAGE, '--ignition', join(dir, 'notjson.ign')]);
  t.is(syntax.code, 2);
  t.regex(syntax.stderr, /IGNITION_INVALID.*not valid JSON/);
});

test('usage errors: unknown driver, tag for legacy, bad spec, --ca with a non-PEM file', async (t) => {
  const driver = await runCli(['ignition', '--driver', 'pivotd', '--image', IMAGE]);
  t.is(driver.code, 2);
  t.regex(driver.stderr, /unknown driver 'pivotd'/);
  const tag = await runCli(['ignition', '--image', '10.0.2.2:5000/os:latest']);
  t.is(tag.code, 2);
  t.regex(tag.stderr, /IGNITION_IMAGE_NOT_PINNED/);
  const spec = await runCli(['ignition', '--image', IMAGE, '--spec', '4.0.0']);
  t.is(spec.code, 2);
  t.regex(spec.stderr, /IGNITION_SPEC/);
  await writeFile(join(dir, 'ca.txt'), 'not a cert');
  const ca = await runCli(['ignition', '--image', IMAGE, '--ca', join(dir, 'ca.txt')]);
  t.is(ca.code, 2);
  t.regex(ca.stderr, /not a PEM certificate/);
});

test('--driver mcd --mco-image with --mirror: the units run that image, the drop-in sends the prefix to the mirror', async (t) => {
  const mco = `10.0.2.2:5000/devpivot-fixture/mco@sha256:${'b'.repeat(64)}`;
  const upstream = `quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:${'a'.repeat(64)}`;
  const result = await runCli([
    'ignition',
    '--driver',
    'mcd',
    '--image',
    upstream,
    '--mco-image',
    mco,
    '--insecure-registry',
    '10.0.2.2:5000',
    '--mirror',
    'quay.io/openshift-release-dev',
  ]);
  t.is(result.code, 0, result.stderr);
  const config = JSON.parse(result.stdout);
  const units = config.systemd.units as { name: string; contents?: string }[];
  const firstboot = units.find((unit) => unit.name === 'machine-config-daemon-firstboot.service');
  t.regex(
    firstboot?.contents ?? '',
    new RegExp(`--entrypoint machine-config-daemon '${mco}' firstboot-complete-machineconfig`),
  );
  const files = config.storage.files as { path: string; contents: { source: string } }[];
  const file = (path: string) => {
    const source = files.find((f) => f.path === path)?.contents.source ?? '';
    return decodeURIComponent(source.replace(/^data:[^,]*,/, ''));
  };
  const encapsulated = JSON.parse(file('/etc/ignition-machine-config-encapsulated.json'));
  t.is(encapsulated.spec.osImageURL, upstream);
  const dropIn = file('/etc/containers/registries.conf.d/50-devpivot-mirror.conf');
  t.regex(dropIn, /prefix = "quay\.io\/openshift-release-dev"/);
  t.regex(dropIn, /location = "10\.0\.2\.2:5000\/openshift-release-dev"/);
  t.true((await runIgnitionValidate(config)).ok);
});

test('--mco-image off the mcd driver, --mirror without a registry or with a whole registry: usage errors', async (t) => {
  const cases: [string[], RegExp][] = [
    [['--driver', 'legacy', '--mco-image', IMAGE], /--mco-image applies to --driver mcd only/],
    [['--driver', 'mcd'], /the mcd driver needs an MCO image[\s\S]*--mco-image/],
    [['--mirror', 'quay.io/ns'], /--mirror needs the registry that serves the mirrored content/],
    [['--mirror', 'quay.io', '--insecure-registry', '10.0.2.2:5000'], /--mirror 'quay\.io' names a whole registry/],
  ];
  for (const [args, expected] of cases) {
    const result = await runCli(['ignition', '--image', IMAGE, ...args]);
    t.is(result.code, 2, args.join(' '));
    t.regex(result.stderr, expected);
  }
});
