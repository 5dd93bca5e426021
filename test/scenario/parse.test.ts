import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { loadScenario, parseScenario, ScenarioError } from '../../src/scenario/parse.js';
import { formatDuration, parseDuration, parseSize } from '../../src/scenario/units.js';
import { repoRoot } from '../helpers/cli.js';
import { fakeEnvironment } from './environment.js';
import { problems } from './problems.js';

test('every shipped scenario parses', async (t) => {
  const dir = join(repoRoot, 'scenarios');
  const files = readdirSync(dir).filter((name) => name.endsWith('.yaml'));
  t.true(files.length >= 8, files.join(', '));
  for (const name of files) {
    const scenario = await loadScenario(join(dir, name));
    t.true(scenario.steps.length > 0, name);
    t.true(scenario.nodes.length > 0, name);
  }
});

test('the six-line scenario gets defaults and default steps', (t) => {
  const scenario = parseScenario('nodes:\n  node1:\n    pivot: fixture:2\n', '/tmp/x/simple.yaml');
  t.is(scenario.name, 'simple');
  t.deepEqual(scenario.registry, { kind: 'embedded' });
  const [node] = scenario.nodes;
  t.like(node, {
    name: 'node1',
    image: 'fixture:1',
    memoryMiB: 1024,
    vcpus: 1,
    firmware: 'bios',
    driver: 'legacy',
    pivot: 'fixture:2',
  });
  t.deepEqual(scenario.images.get('fixture:1'), { kind: 'fixture', version: '1' });
  t.deepEqual(scenario.oscontainers.get('fixture:2'), { kind: 'build-fixture', version: '2' });
  t.deepEqual(
    scenario.steps.map((step) => step.label),
    ['up', 'expect node1 booted fixture:2 within 10m', 'assert node1 booted fixture:2'],
  );
});

test('the default scenario: old-to-new', async (t) => {
  const scenario = await loadScenario(join(repoRoot, 'scenarios', 'old-to-new.yaml'));
  t.is(scenario.name, 'old-to-new');
  t.deepEqual(
    scenario.steps.map((step) => step.kind),
    ['up', 'expect', 'expect', 'expect', 'expect', 'assert'],
  );
  t.like(scenario.steps[4], { kind: 'expect', event: 'booted', booted: 'fixture:2', withinMs: 300_000 });
  t.like(scenario.steps[5], { kind: 'assert', booted: 'fixture:2', reboots: 1, pos: { line: 14, col: 5 } });
});

test('every section in its long form', (t) => {
  const text = `name: full
description: all the forms
timeout: 45m
images:
  old: fixture:1
  local: { path: ./disk.qcow2, sha256: ${'a'.repeat(64)} }
  remote: { url: https://example.test/x.qcow2, sha256: ${'b'.repeat(64)} }
oscontainers:
  new: { build: fixture:2 }
  tree: { build: { repo: /srv/repo, commit: ${'c'.repeat(64)} } }
  dir: { build: { rootfs: ./rootfs, version: '9' } }
  upstream: { pull: 'quay.io/x/y@sha256:${'d'.repeat(64)}' }
nodes:
  a:
    image: old
    memory: 2GiB
    vcpus: 2
    firmware: uefi
    driver: legacy
    pivot: new
    kernel-args: { add: [x=1], delete: quiet }
    ignition: { storage: { files: [ { path: /etc/x, contents: { source: 'data:,x' } } ] } }
  b: { image: local, driver: rpm-ostree, pivot: upstream }
steps:
  - fault: { registry: slow, rate: 512KiB/s }
  - up: [a]
  - up: b
  - expect: { node: a, event: pulling }
  - expect: { node: a, event: failure, match: 'oom', within: 90s }
  - expect: { node: b, console: 'Started .*', within: 1m30s }
  - power-off: { node: a, when: pivot.staged, after: 2s, restart: false }
  - reboot: a
  - pivot: { node: a, to: new }
  - wait: 10
  - fault: { registry: down }
  - assert: { node: b, booted: upstream, reboots: 2, failed: false }
  - down
`;
  const env = fakeEnvironment({
    '/work/s/disk.qcow2': 'qcow2',
    '/work/s/rootfs': 'directory',
    '/srv/repo': 'directory',
    '/srv/repo/config': 'file',
    '/srv/repo/objects': 'directory',
    [`/srv/repo/objects/cc/${'c'.repeat(62)}.commit`]: 'file',
  });
  const scenario = parseScenario(text, '/work/s/full.yaml', env);
  t.is(scenario.timeoutMs, 45 * 60_000);
  t.deepEqual(scenario.images.get('local'), { kind: 'path', path: '/work/s/disk.qcow2', sha256: 'a'.repeat(64) });
  t.deepEqual(scenario.oscontainers.get('dir'), { kind: 'build-rootfs', rootfs: '/work/s/rootfs', version: '9' });
  t.deepEqual(scenario.registry, { kind: 'embedded' });
  const external = parseScenario('registry: { url: http://127.0.0.1:5000/ }\nnodes: { n: {} }\n', '/x.yaml');
  t.deepEqual(external.registry, { kind: 'external', url: 'http://127.0.0.1:5000' });
  t.like(scenario.nodes[0], {
    memoryMiB: 2048,
    vcpus: 2,
    firmware: 'uefi',
    kernelArgs: { add: ['x=1'], delete: ['quiet'] },
  });
  t.deepEqual(scenario.nodes[0]!.ignition, {
    storage: { files: [{ path: '/etc/x', contents: { source: 'data:,x' } }] },
  });
  t.deepEqual(
    scenario.steps.map((step) => step.label),
    [
      'fault registry slow 512KiB/s',
      'up a',
      'up b',
      'expect a pivot.pulling within 5m',
      'expect a failure /oom/ within 1m30s',
      'expect b console /Started .*/ within 1m30s',
      'power-off a when staged +2s',
      'reboot a',
      'pivot a to new',
      'wait 10s',
      'fault registry down',
      'assert b booted upstream reboots=2 failed=false',
      'down',
    ],
  );
  t.like(scenario.steps[0], { kind: 'fault', registry: 'slow', bytesPerSecond: 512 * 1024 });
  t.like(scenario.steps[6], { kind: 'power-off', when: 'staged', afterMs: 2000, restart: false });
});

const malformed: [string, string, string[]][] = [
  [
    'empty file',
    '',
    ['1:1: the scenario is empty ("a minimal scenario has \'nodes:\' with one node")'.replace(/"/g, '')],
  ],
  [
    'unknown top-level key',
    'nodes:\n  n: {}\nstep:\n  - up\n',
    ["3:1: unknown key 'step' in the scenario (did you mean 'steps'?)"],
  ],
  [
    'unknown node key',
    'nodes:\n  node1:\n    imagee: fixture:1\n',
    ["3:5: unknown key 'imagee' in node 'node1' (did you mean 'image'?)"],
  ],
  [
    'bad firmware',
    'nodes:\n  n:\n    firmware: efi\n',
    ["3:15: node 'n' firmware must be one of bios, uefi, uefi-secure; got 'efi' (did you mean 'uefi'?)"],
  ],
  ['tpm not a boolean', 'nodes:\n  n:\n    tpm: yes please\n', ["3:10: node 'n' tpm must be true or false"]],
  [
    'bad driver',
    'nodes:\n  n:\n    driver: rpmostree\n',
    [
      "3:13: node 'n' driver must be one of legacy, rpm-ostree, bootc, mcd; got 'rpmostree' (did you mean 'rpm-ostree'?)",
    ],
  ],
  [
    'undefined image',
    'images:\n  old: fixture:1\nnodes:\n  n:\n    image: olf\n',
    ["5:12: node 'n' image 'olf' is not defined (did you mean 'old'?)"],
  ],
  [
    'small memory',
    'nodes:\n  n:\n    memory: 64\n',
    ["3:13: node 'n' memory must be a size of at least 256MiB like 1024 (MiB) or 2GiB"],
  ],
  [
    'bad vcpus',
    'nodes:\n  n:\n    vcpus: two\n',
    ["3:12: node 'n' vcpus must be a whole number from 1 to 64; got string 'two'"],
  ],
  [
    'bad node name',
    'nodes:\n  Node_1: {}\n',
    [
      "2:3: node name 'Node_1' is not valid (lowercase letters, digits and single dashes, not at either end, at most 40 characters)",
    ],
  ],
  ['no nodes', 'name: x\n', ["1:1: the scenario needs 'nodes:' (at least one node)"]],
  [
    'steps not a list',
    'nodes:\n  n: {}\nsteps: up\n',
    ["3:8: steps must be a list (- up, - expect: ...), got string 'up'"],
  ],
  [
    'unknown step',
    'nodes:\n  n: {}\nsteps:\n  - up\n  - expcet: { event: booted }\n',
    ["5:5: unknown step 'expcet' (did you mean 'expect'?)"],
  ],
  [
    'unknown expect event',
    'nodes:\n  n: {}\nsteps:\n  - up\n  - expect: { event: bootd }\n',
    [
      "5:22: expect.event must be one of ignition, pivot.pulling, pivot.staging, pivot.staged, pivot.rebooting, pivot.skipped, reboot, stopped, booted, failure, health.pass, health.fail, fallback, console; got 'bootd' (did you mean 'booted'?)",
    ],
  ],
  [
    'bad duration',
    'nodes:\n  n: {}\nsteps:\n  - up\n  - wait: 5 minutes\n',
    ["5:11: wait must be a duration like 90s, 5m or 1m30s; got string '5 minutes'"],
  ],
  [
    'node required with two nodes',
    'nodes:\n  a: {}\n  b: {}\nsteps:\n  - up\n  - expect: { event: booted }\n',
    ["6:13: 'expect' needs 'node:' when the scenario has more than one node (one of: a, b)"],
  ],
  [
    'unknown node in a step',
    'nodes:\n  node1: {}\nsteps:\n  - up\n  - reboot: nod1\n',
    ["5:13: unknown node 'nod1' (did you mean 'node1'?)"],
  ],
  [
    'expect before up',
    'nodes:\n  n: {}\nsteps:\n  - expect: { event: booted }\n  - up\n',
    ["4:5: 'expect' on node 'n', which is not up at this point (put '- up' (or '- up: [n]') before it)"],
  ],
  [
    'two forms in one expect',
    'nodes:\n  n: {}\nsteps:\n  - up\n  - expect: { event: booted, booted: fixture:1 }\n',
    ["5:13: expect needs exactly one of 'event', 'booted' or 'console', got event and booted"],
  ],
  [
    'bad regex',
    'nodes:\n  n: {}\nsteps:\n  - up\n  - expect: { console: "a(" }\n',
    ['5:24: expect.console is not a valid regular expression: Invalid regular expression: /a(/: Unterminated group'],
  ],
  [
    'unknown fault',
    'nodes:\n  n: {}\nsteps:\n  - fault: { registry: dwn }\n',
    ["4:24: fault.registry must be one of down, up, corrupt-blob, slow, clear; got 'dwn' (did you mean 'down'?)"],
  ],
  [
    'rate without slow',
    'nodes:\n  n: {}\nsteps:\n  - fault: { registry: down, rate: 1MiB }\n',
    ["4:30: 'rate' only applies to 'registry: slow'"],
  ],
  [
    'node on a fault that acts on every node',
    'nodes:\n  n: {}\n  m: {}\nsteps:\n  - fault: { registry: down, node: n }\n',
    ["5:30: 'node' only applies to 'registry: corrupt-blob'"],
  ],
  [
    'corrupt-blob for a node that is not defined',
    'nodes:\n  n: {}\n  m: {}\nsteps:\n  - fault: { registry: corrupt-blob, node: x }\n',
    ["5:44: unknown node 'x' (did you mean 'n'?)"],
  ],
  [
    'bad power-off phase',
    'nodes:\n  n: {}\nsteps:\n  - up\n  - power-off: { when: stagged }\n',
    ["5:24: power-off.when must be one of pulling, staging, staged, rebooting; got 'stagged' (did you mean 'staged'?)"],
  ],
  [
    'pivot to an oscontainer that is not defined',
    'nodes:\n  n: { pivot: fixture:2 }\nsteps:\n  - up\n  - pivot: { to: v9 }\n',
    [
      "5:18: pivot.to 'v9' is not defined (define it under oscontainers:, or write fixture:N or a pullspec HOST[:PORT]/REPO@sha256:…)",
    ],
  ],
  [
    'pivot of a node without a target and no to',
    'nodes:\n  n: {}\nsteps:\n  - up\n  - pivot: n\n',
    ["5:12: node 'n' has no pivot target (name one: 'pivot: { node, to: NAME }')"],
  ],
  [
    'rollback before up, of an unknown node, with a bad key',
    'nodes:\n  n: {}\nsteps:\n  - rollback: n\n  - up\n  - rollback: { node: m }\n  - rollback: { within: 1m, to: x }\n',
    [
      "4:5: 'rollback' on node 'n', which is not up at this point (put '- up' (or '- up: [n]') before it)",
      "6:23: unknown node 'm' (did you mean 'n'?)",
      "7:29: unknown key 'to' in rollback (expected one of: node, within)",
    ],
  ],
  [
    'follow without a pivot target, a tag that is not REPO:TAG, an upgrade of a node that follows none',
    'nodes:\n  a: { follow: os/s:stable }\n  b: { pivot: fixture:2, follow: os/s }\n  c: {}\nsteps:\n  - up\n  - upgrade: c\n  - tag: { oscontainer: fixture:2, as: "os/s:bad tag" }\n',
    [
      "2:8: node 'a' follow needs a pivot target (the image the tag names first)",
      "3:34: node 'b' follow 'os/s' is not REPO:TAG (write REPO:TAG, a repository of the embedded registry and a tag (e.g. os/stream:stable))",
      "7:14: node 'c' follows no tag (give it 'follow: REPO:TAG' (and a pivot target))",
      "8:40: tag.as 'os/s:bad tag' is not REPO:TAG (write REPO:TAG, a repository of the embedded registry and a tag (e.g. os/stream:stable))",
    ],
  ],
  [
    'finalize on a driver that cannot stage for later, download-only not a boolean',
    'oscontainers:\n  v2: { build: { fixture: 2, format: native } }\nnodes:\n  l: {}\n  b: { driver: bootc, pivot: v2, follow: os/s:stable }\nsteps:\n  - up\n  - finalize: l\n  - upgrade: { node: b, download-only: yes }\n  - finalize: b\n',
    [
      '8:15: the legacy driver cannot stage for later: openshift/pivot stages and reboots in one run; it has no download-only mode (give the node driver bootc or rpm-ostree)',
      '9:40: upgrade.download-only must be true or false',
    ],
  ],
  [
    'ssh without run, before up, with a bad regex',
    'nodes:\n  n: {}\nsteps:\n  - ssh: { run: uptime }\n  - up\n  - ssh: { node: n }\n  - ssh: { run: uptime, expect: "(" }\n  - ssh: { run: "  " }\n',
    [
      "4:5: 'ssh' on node 'n', which is not up at this point (put '- up' (or '- up: [n]') before it)",
      "6:10: ssh needs 'run'",
      '7:33: ssh.expect is not a valid regular expression: Invalid regular expression: /(/: Unterminated group',
      '8:17: ssh.run is empty (write the command to run on the node)',
    ],
  ],
  [
    'url without checksum',
    'images:\n  x: https://e.test/a.qcow2\nnodes:\n  n: { image: x }\n',
    ["2:6: image 'x': a URL needs a checksum (write { url: ..., sha256: ... })"],
  ],
  [
    'bad sha256',
    'images:\n  x: { path: /nonexistent/a.qcow2, sha256: abc }\nnodes:\n  n: { image: x }\n',
    [
      "2:14: image 'x': /nonexistent/a.qcow2 does not exist (relative paths start at the directory of the scenario file)",
      "2:44: image 'x'.sha256 must be 64 lowercase hex digits",
    ],
  ],
  [
    'bad pull reference',
    'oscontainers:\n  x: { pull: "a b" }\nnodes:\n  n: {}\n',
    [
      "2:14: oscontainer 'x'.pull: invalid image reference 'a b': 'library/a b' is not a valid repository name (like quay.io/org/os@sha256:<64 hex> or host:port/repo:tag)",
    ],
  ],
  [
    'bad registry',
    'registry: local\nnodes:\n  n: {}\n',
    ["1:11: registry must be 'embedded' or an http(s) URL; got 'local'"],
  ],
  [
    'YAML syntax error',
    'nodes:\n  n: {\n',
    ['3:1: YAML syntax: Flow map in block collection must be sufficiently indented and end with a }'],
  ],
  ['duplicate key', 'nodes:\n  n: {}\n  n: {}\n', ['3:3: YAML syntax: Map keys must be unique']],
  [
    'several problems at once',
    'nodes:\n  n:\n    vcpu: 2\nsteps:\n  - up\n  - wiat: 1s\n  - assert: { }\n',
    [
      "3:5: unknown key 'vcpu' in node 'n' (did you mean 'vcpus'?)",
      "6:5: unknown step 'wiat' (did you mean 'wait'?)",
      "7:13: assert needs 'booted', 'reboots', 'failed' or 'fetched'",
    ],
  ],
  [
    'kernel-args with bootc',
    'nodes:\n  n:\n    driver: bootc\n    kernel-args: { add: [a] }\n',
    [
      "4:18: node 'n' kernel-args cannot be set by the bootc driver (bootc images carry their kernel arguments in /usr/lib/bootc/kargs.d) (drop kernel-args)",
    ],
  ],
  [
    'mcd kernel-args that delete',
    'nodes:\n  n:\n    driver: mcd\n    kernel-args: { delete: [quiet] }\n',
    [
      "4:18: node 'n' kernel-args of the mcd driver can only add (a MachineConfig lists spec.kernelArguments) (drop the delete list)",
    ],
  ],
  [
    'mco-image without driver mcd, and one that is not a pullspec',
    'nodes:\n  a:\n    mco-image: r:1/mco\n  b:\n    driver: mcd\n    mco-image: "x\'; reboot"\n',
    [
      "3:5: node 'a' mco-image needs driver: mcd",
      "6:16: node 'b' mco-image 'x'; reboot' is not a pullspec (write HOST[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST] as the guest reaches it)",
    ],
  ],
];

test('driver mcd: legacy and native targets, add-only kernel args, mco-image kept', (t) => {
  const scenario = parseScenario(
    `oscontainers:
  v2n: { build: { fixture: 2, format: native } }
nodes:
  a: { driver: mcd, pivot: fixture:2, kernel-args: { add: [a=1] }, mco-image: 10.0.2.2:5000/x/mco:4.13 }
  b: { driver: mcd, pivot: v2n }
`,
    'x.yaml',
  );
  t.like(scenario.nodes[0], { driver: 'mcd', pivot: 'fixture:2', mcoImage: '10.0.2.2:5000/x/mco:4.13' });
  t.deepEqual(scenario.nodes[0]?.kernelArgs, { add: ['a=1'], delete: [] });
  t.like(scenario.nodes[1], { driver: 'mcd', pivot: 'v2n' });
  t.is(scenario.nodes[1]?.mcoImage, undefined);
});

test('driver rpm-ostree: kernel args add and delete (rpm-ostree kargs on the staged deployment, as the MCD does)', (t) => {
  const scenario = parseScenario(
    `oscontainers:
  v2n: { build: { fixture: 2, format: native } }
nodes:
  a: { driver: rpm-ostree, pivot: v2n, kernel-args: { add: [a=1], delete: [quiet] } }
`,
    'x.yaml',
  );
  t.deepEqual(scenario.nodes[0]?.kernelArgs, { add: ['a=1'], delete: ['quiet'] });
});

for (const [title, text, expected] of malformed) {
  test(`malformed: ${title}`, (t) => {
    t.deepEqual(problems(text), expected);
  });
}

test('ScenarioError message carries file:line:col and exit status 2', (t) => {
  const error = t.throws(() => parseScenario('nodes:\n  n:\n    imag: x\n', 'scenarios/x.yaml'), {
    instanceOf: ScenarioError,
  });
  t.is(error.code, 'SCENARIO_INVALID');
  t.is(error.exitCode, 2);
  t.regex(error.message, /scenarios\/x\.yaml:3:5: unknown key 'imag' in node 'n' \(did you mean 'image'\?\)/);
});

test('a missing file is a set-up error with a hint', async (t) => {
  const error = await t.throwsAsync(() => loadScenario('/nonexistent/s.yaml'));
  t.like(error, { code: 'SCENARIO_NOT_FOUND', exitCode: 2 });
});

test('durations and sizes', (t) => {
  t.is(parseDuration('90s'), 90_000);
  t.is(parseDuration('1m30s'), 90_000);
  t.is(parseDuration('500ms'), 500);
  t.is(parseDuration(2), 2000);
  t.is(parseDuration('5 m'), undefined);
  t.is(parseDuration('m'), undefined);
  t.is(parseSize('2GiB'), 2 * 1024 ** 3);
  t.is(parseSize(1024, 1024 ** 2), 1024 ** 3);
  t.is(parseSize('1 TB'), undefined);
  t.is(formatDuration(300_000), '5m');
  t.is(formatDuration(90_000), '1m30s');
  t.is(formatDuration(1500), '1.5s');
});

test('ssh and pivot steps: a pivot may name any oscontainer (fixture:N defines one), ssh its command and check', (t) => {
  const scenario = parseScenario(
    `nodes:
  n: { pivot: fixture:2 }
steps:
  - up
  - pivot: { node: n, to: fixture:3, within: 20m }
  - pivot: n
  - ssh: { run: cat /etc/os-release, expect: 'VERSION_ID="?3', within: 2m }
  - ssh: { node: n, run: "systemctl is-active sshd" }
`,
    '/tmp/x/hops.yaml',
  );
  t.deepEqual(scenario.oscontainers.get('fixture:3'), { kind: 'build-fixture', version: '3' });
  t.deepEqual(
    scenario.steps.map((step) => step.label),
    [
      'up',
      'pivot n to fixture:3 within 20m',
      'pivot n to fixture:2',
      `ssh n 'cat /etc/os-release' =~ /VERSION_ID="?3/ within 2m`,
      "ssh n 'systemctl is-active sshd' exits 0 within 5m",
    ],
  );
  t.like(scenario.steps[3], { kind: 'ssh', node: 'n', run: 'cat /etc/os-release', withinMs: 120_000 });
});

test('format: native builds for the rpm-ostree and bootc drivers; no format is legacy', (t) => {
  const text = `
oscontainers:
  v2: { build: { fixture: 2, format: native } }
  v3: { build: { fixture: 3, format: legacy } }
  plain: { build: fixture:3 }
nodes:
  a: { driver: rpm-ostree, pivot: v2 }
  b: { driver: bootc, pivot: v2 }
  c: { driver: legacy, pivot: v3 }
`;
  const scenario = parseScenario(text, '/work/s/native.yaml', fakeEnvironment({}));
  t.deepEqual(scenario.oscontainers.get('v2'), { kind: 'build-fixture', version: '2', format: 'native' });
  t.deepEqual(scenario.oscontainers.get('v3'), { kind: 'build-fixture', version: '3', format: 'legacy' });
  t.deepEqual(scenario.oscontainers.get('plain'), { kind: 'build-fixture', version: '3' });
  t.deepEqual(
    scenario.nodes.map((node) => [node.driver, node.pivot]),
    [
      ['rpm-ostree', 'v2'],
      ['bootc', 'v2'],
      ['legacy', 'v3'],
    ],
  );
});
