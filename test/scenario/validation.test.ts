/** Validation rules that depend on the machine (memory, firmware files, the validator) or on the fixture recipe. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { localEnvironment } from '../../src/scenario/environment.js';
import { FIXTURE_RECIPE } from '../../src/scenario/fixture-recipe.js';
import { dottedPath, serialize, validatorIssues } from '../../src/scenario/ignition-fragment.js';
import { parseScenario, ScenarioError, validateScenario } from '../../src/scenario/parse.js';
import { repoRoot } from '../helpers/cli.js';
import { fakeEnvironment } from './environment.js';

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ScenarioError) return error.issues.map((i) => `${i.line}:${i.col}: ${i.message}`);
    throw error;
  }
  return [];
}

test("the fixture versions validation knows are the recipe's: three commits, the disk of version 1", (t) => {
  const recipe = readFileSync(join(repoRoot, 'images', 'fixture', 'build.sh'), 'utf8');
  const loop = /^for version in ([\d ]+); do$/m.exec(recipe);
  t.truthy(loop, 'build.sh commits its versions in one loop');
  t.deepEqual(loop![1]!.trim().split(/\s+/), [...FIXTURE_RECIPE.versions]);
  t.deepEqual([...FIXTURE_RECIPE.bootable], ['1']);
  t.regex(recipe, /sysroot of version 1/);
});

test('memory is checked against the host, firmware files against what is installed', (t) => {
  const small = localEnvironment({ totalMemoryBytes: 2 * 1024 ** 3 });
  t.deepEqual(
    issuesOf(() => parseScenario('nodes:\n  n: { memory: 3GiB }\n', '/s.yaml', small)),
    ["2:16: node 'n' memory of 3.0 GiB is more than this host has (2.0 GiB)"],
  );
  t.notThrows(() => parseScenario('nodes:\n  n: { memory: 2GiB }\n', '/s.yaml', small));
  const noOvmf = fakeEnvironment({}, { firmwareFiles: { uefi: ['/usr/share/OVMF/OVMF_CODE_4M.fd'] } });
  t.deepEqual(
    issuesOf(() => parseScenario('nodes:\n  n: { firmware: uefi }\n', '/s.yaml', noOvmf)),
    ["2:18: node 'n' firmware uefi needs /usr/share/OVMF/OVMF_CODE_4M.fd, which this host does not have"],
  );
  const withOvmf = fakeEnvironment(
    { '/usr/share/OVMF/OVMF_CODE_4M.fd': 'file' },
    { firmwareFiles: { uefi: ['/usr/share/OVMF/OVMF_CODE_4M.fd'] } },
  );
  t.notThrows(() => parseScenario('nodes:\n  n: { firmware: uefi }\n', '/s.yaml', withOvmf));
});

test('uefi-secure needs the Secure Boot OVMF pair, tpm: true needs swtpm', (t) => {
  const env = fakeEnvironment(
    { '/usr/share/OVMF/OVMF_CODE_4M.ms.fd': 'file' },
    {
      firmwareFiles: { 'uefi-secure': ['/usr/share/OVMF/OVMF_CODE_4M.ms.fd', '/usr/share/OVMF/OVMF_VARS_4M.ms.fd'] },
      tpmFiles: ['/usr/bin/swtpm'],
    },
  );
  t.deepEqual(
    issuesOf(() => parseScenario('nodes:\n  n: { firmware: uefi-secure, tpm: true }\n', '/s.yaml', env)),
    [
      "2:18: node 'n' firmware uefi-secure needs /usr/share/OVMF/OVMF_VARS_4M.ms.fd, which this host does not have",
      "2:36: node 'n' tpm needs /usr/bin/swtpm, which this host does not have",
    ],
  );
  const node = parseScenario('nodes:\n  n: { tpm: false }\n', '/s.yaml', env).nodes[0]!;
  t.is(node.tpm, false);
  t.is(node.firmware, 'bios');
});

test('a checksum of digits only is read as written, not as a YAML number', (t) => {
  const digits = '0123456789'.repeat(7).slice(0, 64);
  const env = fakeEnvironment({ '/d/disk.qcow2': 'qcow2' });
  const scenario = parseScenario(
    `images:\n  d: { path: ./disk.qcow2, sha256: ${digits} }\nnodes:\n  n: { image: d }\n`,
    '/d/s.yaml',
    env,
  );
  t.deepEqual(scenario.images.get('d'), { kind: 'path', path: '/d/disk.qcow2', sha256: digits });
});

test('without ignition-validate a fragment is checked for its version only', async (t) => {
  const text = 'nodes:\n  n:\n    ignition: { storage: { files: [ { path: etc/x } ] } }\n';
  await t.notThrowsAsync(() => validateScenario(text, '/s.yaml', localEnvironment()));
  const checked = localEnvironment({
    validateIgnition: async () => ({
      checked: true,
      ok: false,
      output: 'error at $.storage.files.0.path, line 1 col 61: path not absolute',
    }),
  });
  const error = await t.throwsAsync(() => validateScenario(text, '/s.yaml', checked), { instanceOf: ScenarioError });
  t.deepEqual(
    error!.issues.map((i) => `${i.line}:${i.col}`),
    ['3:45'],
  );
});

test("ignition-validate's messages map back to paths: by JSON path, or by the offset in the text it was given", (t) => {
  const { text, spans } = serialize({ ignition: { version: '3.0.0' }, storage: { files: 'x' } });
  t.is(text, '{"ignition":{"version":"3.0.0"},"storage":{"files":"x"}}');
  const offsetCol = text.indexOf('"x"') + 3 + 1;
  t.deepEqual(
    validatorIssues(
      [
        'error at $.systemd.units.0.name, line 1 col 133: invalid systemd unit extension',
        `error at line 1 col ${offsetCol}: json: cannot unmarshal string into Go struct field`,
        'warning at $.storage.filez, line 1 col 44: Unused key filez',
        'warning at $.storage.files.0.mode, line 1 col 9: permissions unset, defaulting to 0644',
      ].join('\n'),
      spans,
    ),
    [
      { path: ['systemd', 'units', 0, 'name'], message: 'invalid systemd unit extension' },
      { path: ['storage', 'files'], message: 'json: cannot unmarshal string into Go struct field' },
      { path: ['storage', 'filez'], message: 'Unused key filez' },
    ],
  );
  t.deepEqual(dottedPath('storage.files[0].path'), ['storage', 'files', 0, 'path']);
});

test("with a remote libvirt URI the host's memory and firmware files are not this machine's: not checked", async (t) => {
  const { scenarioEnvironment, isLocalUri } = await import('../../src/cli/scenario-environment.js');
  t.true(isLocalUri('qemu:///system'));
  t.true(isLocalUri('qemu+unix:///session?socket=/run/x'));
  t.false(isLocalUri('qemu+tcp://10.0.0.5/system'));
  const text = 'nodes:\n  n: { memory: 99999999GiB, firmware: uefi }\n';
  t.notThrows(() => parseScenario(text, '/s.yaml', scenarioEnvironment('qemu+ssh://hypervisor/system')));
  t.throws(() => parseScenario(text, '/s.yaml', scenarioEnvironment('qemu:///system')), { instanceOf: ScenarioError });
});
