import test from 'ava';
import { DevpivotError } from '../../src/core/errors.js';
import type { RegistryFaults } from '../../src/registry/index.js';
import { assert, assertStep } from '../../src/steps/assert.js';
import { down } from '../../src/steps/down.js';
import { expect, expectStep } from '../../src/steps/expect.js';
import { fault, faultStep } from '../../src/steps/fault.js';
import { finalize, finalizeStep } from '../../src/steps/finalize.js';
import {
  expectsFailureOn,
  isStepKind,
  runStep,
  STEP_KINDS,
  STEPS,
  type StepDefinition,
  type StepKind,
  type StepOf,
  type StepRuntime,
} from '../../src/steps/index.js';
import { pivot, pivotStep } from '../../src/steps/pivot.js';
import { powerOff, powerOffStep } from '../../src/steps/power-off.js';
import { reboot } from '../../src/steps/reboot.js';
import { rollback, rollbackStep } from '../../src/steps/rollback.js';
import type { NodeLogEvent, SshResult } from '../../src/steps/runtime.js';
import { ssh, sshStep } from '../../src/steps/ssh.js';
import { tag, tagStep } from '../../src/steps/tag.js';
import { up, upStep } from '../../src/steps/up.js';
import { upgrade, upgradeStep } from '../../src/steps/upgrade.js';
import { wait } from '../../src/steps/wait.js';

const pos = { line: 3, col: 5 };

test('the map is the one list of step kinds, in the order hints name them', (t) => {
  t.deepEqual(STEP_KINDS, [
    'up',
    'expect',
    'assert',
    'fault',
    'power-off',
    'reboot',
    'wait',
    'pivot',
    'rollback',
    'tag',
    'upgrade',
    'finalize',
    'ssh',
    'down',
  ]);
  t.true(isStepKind('power-off'));
  t.false(isStepKind('poweroff'));
  t.false(isStepKind('toString'), 'inherited keys are not kinds');
});

test('a kind without a definition, or a definition without a kind, does not compile', (t) => {
  type Map = { readonly [K in StepKind]: StepDefinition<StepOf<K>> };
  const all = {
    up,
    expect,
    assert,
    fault,
    'power-off': powerOff,
    reboot,
    wait,
    pivot,
    rollback,
    tag,
    upgrade,
    finalize,
    ssh,
    down,
  };
  const { down: _down, ...withoutDown } = all;
  // @ts-expect-error: 'down' has a step type but no definition here
  const missing: Map = withoutDown;
  // @ts-expect-error: 'sleep' is a definition without a step type
  const extra: Map = { ...all, sleep: wait };
  // @ts-expect-error: a definition under another kind's key
  const swapped: Map = { ...all, reboot: wait };
  t.truthy(missing && extra && swapped);
});

test('labels come from the step constructors', (t) => {
  t.is(upStep(['a', 'b'], pos, 2).label, 'up');
  t.is(upStep(['b'], pos, 2).label, 'up b');
  t.is(expectStep({ node: 'n', event: 'booted', withinMs: 300_000, pos }).label, 'expect n booted within 5m');
  t.is(
    expectStep({ node: 'n', event: 'booted', booted: 'new', withinMs: 600_000, pos }).label,
    'expect n booted new within 10m',
  );
  t.is(
    expectStep({ node: 'n', event: 'console', match: 'x.*', withinMs: 90_000, pos }).label,
    'expect n console /x.*/ within 1m30s',
  );
  t.is(
    expectStep({ node: 'n', event: 'failure', match: 'oom', withinMs: 1500, pos }).label,
    'expect n failure /oom/ within 1.5s',
  );
  t.is(
    assertStep({ node: 'n', booted: 'new', reboots: 1, failed: false, pos }).label,
    'assert n booted new reboots=1 failed=false',
  );
  t.is(faultStep('slow', pos, { bytesPerSecond: 1024, text: '1KiB' }).label, 'fault registry slow 1KiB/s');
  t.is(
    powerOffStep({ node: 'n', when: 'staging', afterMs: 2000, withinMs: 1, restart: true, pos }).label,
    'power-off n when staging +2s, power on',
  );
  t.is(powerOffStep({ node: 'n', afterMs: 0, withinMs: 1, restart: false, pos }).label, 'power-off n');
  t.is(pivotStep('n', 'v3', pos).label, 'pivot n to v3');
  t.is(pivotStep('n', 'v3', pos, 1_200_000).label, 'pivot n to v3 within 20m');
  t.is(
    sshStep({ node: 'n', run: 'cat /etc/os-release', expect: 'VERSION_ID=3', withinMs: 120_000, pos }).label,
    "ssh n 'cat /etc/os-release' =~ /VERSION_ID=3/ within 2m",
  );
  t.is(sshStep({ node: 'n', run: 'true', withinMs: 60_000, pos }).label, "ssh n 'true' exits 0 within 1m");
});

/** A runtime that records the calls steps make; `boots`/`failures`/`commits` are what nodes "reported". */
function recordingRuntime(
  world: {
    registry?: RegistryFaults;
    commits?: Record<string, string>;
    digests?: Record<string, string>;
    ssh?: SshResult[];
    layers?: Record<string, string[]>;
    fetched?: Record<string, string[]>;
  } = {},
) {
  const calls: string[] = [];
  const runtime: StepRuntime = {
    async waitFor(node, _match, ms, what, options) {
      calls.push(
        `waitFor ${node} ${ms} ${what}${options?.expectFailureOn ? ` sparing ${options.expectFailureOn}` : ''}`,
      );
      return { kind: 'vm.started', node, domain: 'd', at: 0 };
    },
    async pause(ms) {
      calls.push(`pause ${ms}`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 10)));
    },
    async up(node) {
      calls.push(`up ${node}`);
    },
    async powerCycle(node, restart) {
      calls.push(`powerCycle ${node} ${restart}`);
    },
    async down() {
      calls.push('down');
    },
    registry() {
      const faults = world.registry;
      if (!faults) return undefined;
      return {
        faults,
        stop: async () => void calls.push('registry.stop'),
        start: async () => void calls.push('registry.start'),
      };
    },
    commitOf: (name) => world.commits?.[name],
    digestOf: (name) => world.digests?.[name],
    layersOf: (name) => world.layers?.[name],
    fetched: (node) => world.fetched?.[node] ?? [],
    boots: () => [
      { version: '1', commit: 'a'.repeat(64), image: `fixture.invalid/os@sha256:${'a'.repeat(64)}` },
      { version: '2', commit: 'b'.repeat(64), image: `10.0.2.2:5000/devpivot/v2@sha256:${'d'.repeat(64)}` },
    ],
    failures: () => [],
    async ssh(node, command, options) {
      calls.push(`ssh ${node} ${command} ${options.timeoutMs > 0 ? 'in time' : 'late'}`);
      return world.ssh?.shift() ?? { code: 255, output: 'ssh: connect to host 127.0.0.1 port 1: Connection refused' };
    },
    async requestPivot(node, to, ms) {
      calls.push(`requestPivot ${node} ${to} ${ms}`);
    },
    async requestRollback(node, ms) {
      calls.push(`requestRollback ${node} ${ms}`);
    },
    async tagImage(name, ref) {
      calls.push(`tagImage ${name} ${ref}`);
    },
    async requestUpgrade(node, ms, options) {
      calls.push(`requestUpgrade ${node} ${ms}${options?.downloadOnly ? ' download-only' : ''}`);
    },
    async requestFinalize(node, ms) {
      calls.push(`requestFinalize ${node} ${ms}`);
    },
  };
  return { runtime, calls };
}

test('power-off waits for the phase, then the delay, then power-cycles', async (t) => {
  const { runtime, calls } = recordingRuntime();
  await runStep(powerOffStep({ node: 'n', when: 'staged', afterMs: 20, withinMs: 1000, restart: false, pos }), runtime);
  t.deepEqual(calls, ['waitFor n 1000 n pivot phase staged', 'pause 20', 'powerCycle n false']);
});

test('expect: failure spares its node from fail fast; other expects do not', async (t) => {
  const { runtime, calls } = recordingRuntime();
  const failure = expectStep({ node: 'n', event: 'failure', match: 'oom', withinMs: 5, pos });
  await runStep(failure, runtime);
  t.deepEqual(calls, ['waitFor n 5 n failure /oom/ sparing n']);
  t.is(expectsFailureOn(failure), 'n');
  t.is(expectsFailureOn(expectStep({ node: 'n', event: 'booted', withinMs: 5, pos })), undefined);
  t.is(expectsFailureOn(upStep(['n'], pos, 1)), undefined);
});

test('assert reports every problem at once', async (t) => {
  const { runtime } = recordingRuntime({ commits: { new: 'c'.repeat(64) } });
  const error = await t.throwsAsync(
    runStep(assertStep({ node: 'n', booted: 'new', reboots: 0, failed: true, pos }), runtime),
  );
  t.is(
    error?.message,
    `n booted version 2 (${'b'.repeat(12)}), expected new (${'c'.repeat(12)}); n rebooted 1 time(s), expected 0; n reported no failure`,
  );
});

test('assert booted: a native oscontainer is matched by its manifest digest, not by the merge commit', async (t) => {
  // The node booted a merge commit (b…) over the image's commit (c…): the digest identifies it.
  const native = recordingRuntime({ commits: { v2: 'c'.repeat(64) }, digests: { v2: `sha256:${'d'.repeat(64)}` } });
  await t.notThrowsAsync(runStep(assertStep({ node: 'n', booted: 'v2', pos }), native.runtime));
  const other = recordingRuntime({ commits: { v2: 'b'.repeat(64) }, digests: { v2: `sha256:${'e'.repeat(64)}` } });
  const error = await t.throwsAsync(runStep(assertStep({ node: 'n', booted: 'v2', pos }), other.runtime));
  t.is(
    error?.message,
    `n booted version 2 (10.0.2.2:5000/devpivot/v2@sha256:${'d'.repeat(64)}), expected v2 (sha256:${'e'.repeat(12)})`,
  );
  // Legacy: the commit, as before (the same commit b… matches when no digest is the identity).
  const legacy = recordingRuntime({ commits: { v2: 'b'.repeat(64) } });
  await t.notThrowsAsync(runStep(assertStep({ node: 'n', booted: 'v2', pos }), legacy.runtime));
});

test('expect booted: a native target matches the boot whose image has its digest', async (t) => {
  const { runtime } = recordingRuntime({
    commits: { v2: 'c'.repeat(64) },
    digests: { v2: `sha256:${'d'.repeat(64)}` },
  });
  let match: ((event: NodeLogEvent) => boolean) | undefined;
  runtime.waitFor = async (node, m) => {
    match = m;
    return { kind: 'vm.started', node, domain: 'd', at: 0 };
  };
  await runStep(expectStep({ node: 'n', event: 'booted', booted: 'v2', withinMs: 5, pos }), runtime);
  const boot = (commit: string, image?: string): NodeLogEvent => ({
    kind: 'guest.booted',
    node: 'n',
    bootId: 'b',
    version: '2',
    commit,
    ...(image ? { image } : {}),
    at: 0,
  });
  t.true(match!(boot('f'.repeat(64), `10.0.2.2:5000/devpivot/v2@sha256:${'d'.repeat(64)}`)));
  t.false(match!(boot('c'.repeat(64))), "the image's own commit is not what a native pivot boots");
  t.false(match!(boot('c'.repeat(64), `10.0.2.2:5000/devpivot/v2@sha256:${'e'.repeat(64)}`)));
});

test('fault drives the embedded registry and refuses an external one', async (t) => {
  const faults: RegistryFaults = {};
  const { runtime, calls } = recordingRuntime({ registry: faults });
  await runStep(faultStep('slow', pos, { bytesPerSecond: 1024, text: '1KiB' }), runtime);
  await runStep(faultStep('corrupt-blob', pos), runtime);
  t.deepEqual(faults, { slowBytesPerSecond: 1024, corruptBlobs: true });
  await runStep(faultStep('corrupt-blob', pos, undefined, 'node1'), runtime);
  await runStep(faultStep('corrupt-blob', pos, undefined, 'node2'), runtime);
  t.deepEqual(faults, {
    slowBytesPerSecond: 1024,
    corruptBlobs: true,
    corruptBlobsFor: new Set(['node1', 'node2']),
  });
  t.is(faultStep('corrupt-blob', pos, undefined, 'node1').label, 'fault registry corrupt-blob for node1');
  await runStep(faultStep('clear', pos), runtime);
  t.deepEqual(faults, {});
  await runStep(faultStep('down', pos), runtime);
  await runStep(faultStep('up', pos), runtime);
  t.deepEqual(calls, ['registry.stop', 'registry.start']);
  const external = recordingRuntime().runtime;
  const error = await t.throwsAsync(runStep(faultStep('down', pos), external), { instanceOf: DevpivotError });
  t.is((error as DevpivotError).code, 'FAULT_EXTERNAL_REGISTRY');
});

test('every definition declares where it may stand relative to up', (t) => {
  const needsRunning = STEP_KINDS.filter((kind) => STEPS[kind].schema.nodes === 'needs-running');
  t.deepEqual(needsRunning, [
    'expect',
    'assert',
    'power-off',
    'reboot',
    'pivot',
    'rollback',
    'upgrade',
    'finalize',
    'ssh',
  ]);
  t.deepEqual(
    STEP_KINDS.filter((kind) => STEPS[kind].schema.nodes === 'starts'),
    ['up'],
  );
});

test('ssh runs the command again until its output matches (ssh failures and other output count as not yet)', async (t) => {
  const { runtime, calls } = recordingRuntime({
    ssh: [
      { code: 255, output: 'ssh: connect to host 127.0.0.1 port 40022: Connection refused' },
      { code: 0, output: 'VERSION_ID=2\n' },
      { code: 0, output: 'VERSION_ID=3\n' },
    ],
  });
  await runStep(
    sshStep({ node: 'n', run: 'cat /etc/os-release', expect: 'VERSION_ID=3', withinMs: 60_000, pos }),
    runtime,
  );
  t.deepEqual(calls, [
    'ssh n cat /etc/os-release in time',
    'pause 3000',
    'ssh n cat /etc/os-release in time',
    'pause 3000',
    'ssh n cat /etc/os-release in time',
  ]);
});

test('ssh without expect needs exit status 0; at the deadline it reports the last try', async (t) => {
  const { runtime } = recordingRuntime({ ssh: [{ code: 0, output: '' }] });
  await runStep(sshStep({ node: 'n', run: 'true', withinMs: 60_000, pos }), runtime);
  const failing = recordingRuntime({ ssh: Array.from({ length: 50 }, () => ({ code: 3, output: 'no such unit\n' })) });
  const error = await t.throwsAsync(runStep(sshStep({ node: 'n', run: 'false', withinMs: 20, pos }), failing.runtime));
  t.regex(
    error?.message ?? '',
    /^ssh n 'false': no exit status 0 within 20ms; last try: exit status 3, output:\nno such unit$/,
  );
  const unreachable = recordingRuntime();
  const never = await t.throwsAsync(
    runStep(sshStep({ node: 'n', run: 'uptime', expect: 'up', withinMs: 20, pos }), unreachable.runtime),
  );
  t.regex(never?.message ?? '', /no output matching \/up\/ within 20ms; last try: ssh could not connect/);
});

test('ssh: a last try the deadline cut short is reported with the last finished try, whose output did not match', async (t) => {
  const { runtime } = recordingRuntime();
  let tries = 0;
  const slow: StepRuntime = {
    ...runtime,
    // the first try ends with output that does not match; the second runs until the deadline stops it
    async ssh(_node, _command, { timeoutMs }) {
      if (tries++ === 0) return { code: 0, output: 'sudo: unable to resolve host fixture\ntrue 1\n' };
      await new Promise((resolve) => setTimeout(resolve, timeoutMs));
      return { code: null, output: 'sudo: unable to resolve host fixture\n' };
    },
  };
  const error = await t.throwsAsync(
    runStep(sshStep({ node: 'n', run: 'sudo -n status', expect: '^true 1\\n', withinMs: 200, pos }), slow),
  );
  t.is(
    error?.message,
    "ssh n 'sudo -n status': no output matching /^true 1\\n/ within 200ms; last try: still running, output:\n" +
      'sudo: unable to resolve host fixture\nlast finished try: exit status 0, output:\n' +
      'sudo: unable to resolve host fixture\ntrue 1',
  );
});

test('pivot hands the request to the runtime with its deadline', async (t) => {
  const { runtime, calls } = recordingRuntime();
  await runStep(pivotStep('n', 'v3', pos), runtime);
  t.deepEqual(calls, ['requestPivot n v3 600000']);
});

test('rollback hands the request to the runtime with its deadline', async (t) => {
  const { runtime, calls } = recordingRuntime();
  await runStep(rollbackStep('n', pos), runtime);
  await runStep(rollbackStep('n', pos, 60_000), runtime);
  t.deepEqual(calls, ['requestRollback n 180000', 'requestRollback n 60000']);
  t.is(rollbackStep('n', pos, 60_000).label, 'rollback n within 1m');
});

test('tag and upgrade hand their requests to the runtime', async (t) => {
  const { runtime, calls } = recordingRuntime();
  await runStep(tagStep('v3', 'os/stream:stable', pos), runtime);
  await runStep(upgradeStep('n', pos), runtime);
  t.deepEqual(calls, ['tagImage v3 os/stream:stable', 'requestUpgrade n 600000']);
  t.is(tagStep('v3', 'os/stream:stable', pos).label, 'tag v3 as os/stream:stable');
});

test('a download-only upgrade and its finalize hand their requests to the runtime', async (t) => {
  const { runtime, calls } = recordingRuntime();
  await runStep(upgradeStep('n', pos, undefined, true), runtime);
  await runStep(finalizeStep('n', pos), runtime);
  t.deepEqual(calls, ['requestUpgrade n 600000 download-only', 'requestFinalize n 180000']);
  t.is(upgradeStep('n', pos, undefined, true).label, 'upgrade n download only');
  t.is(finalizeStep('n', pos, 60_000).label, 'finalize n within 1m');
});

test('assert fetched: counts the image layers the node fetched since its last request, names them when wrong', async (t) => {
  const layers = { v2: ['sha256:aaaaaaaaaaaa1', 'sha256:bbbbbbbbbbbb2', 'sha256:cccccccccccc3'] };
  const ok = recordingRuntime({ layers, fetched: { n: ['sha256:cccccccccccc3', 'sha256:other'] } });
  await t.notThrowsAsync(runStep(assertStep({ node: 'n', fetched: 'v2', layers: 1, pos }), ok.runtime));
  const all = recordingRuntime({ layers, fetched: { n: [...layers.v2] } });
  const error = await t.throwsAsync(runStep(assertStep({ node: 'n', fetched: 'v2', layers: 1, pos }), all.runtime));
  t.is(error?.message, "n fetched 3 of v2's 3 layers, expected 1 (aaaaaaaaaaaa, bbbbbbbbbbbb, cccccccccccc)");
  const unknown = await t.throwsAsync(runStep(assertStep({ node: 'n', fetched: 'v9', layers: 0, pos }), ok.runtime));
  t.regex(unknown?.message ?? '', /the layers of 'v9' are unknown/);
});
