import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import { DevpivotError, ExitCode } from '../../src/core/errors.js';
import type { Stamped } from '../../src/core/events.js';
import { guestHostPort, repositoryName, runScenario } from '../../src/engine/engine.js';
import { localEnvironment } from '../../src/scenario/environment.js';
import { parseScenario } from '../../src/scenario/parse.js';
import { tempDir } from '../helpers/temp.js';
import { type FakeOptions, fakeDeps } from './fake.js';

async function runText(
  text: string,
  options: FakeOptions & {
    keep?: boolean;
    signal?: AbortSignal;
    onEvent?: (event: Stamped) => void;
    stagedGraceMs?: number;
  } = {},
) {
  const bus = new EventBus();
  const events: Stamped[] = [];
  bus.subscribe((event) => {
    events.push(event);
    options.onEvent?.(event);
  });
  const world = fakeDeps(options);
  const stateDir = tempDir('devpivot-test-state-');
  const result = await runScenario({
    // The fake fixture has a disk for v2 as well (test/engine/fake.ts).
    scenario: parseScenario(text, '/tmp/test.yaml', localEnvironment({ fixture: FAKE_FIXTURE })),
    deps: world.deps,
    bus,
    signal: options.signal ?? new AbortController().signal,
    keep: options.keep ?? false,
    stateDir,
    cacheDir: '/tmp/devpivot-test-cache',
    ...(options.stagedGraceMs ? { stagedGraceMs: options.stagedGraceMs } : {}),
  });
  const steps = events
    .filter((e) => e.kind === 'step.pass' || e.kind === 'step.fail')
    .map((e) => (e.kind === 'step.fail' ? `✗ ${e.name}: ${e.error}` : `✓ ${(e as { name: string }).name}`));
  return { result, events, world, steps, stateDir };
}

const FAKE_FIXTURE = { versions: ['1', '2', '3'], bootable: ['1', '2'] };

const OLD_TO_NEW = `nodes:
  node1: { image: fixture:1, pivot: fixture:2 }
steps:
  - up
  - expect: { event: ignition, within: 2s }
  - expect: { event: pivot.pulling, within: 2s }
  - expect: { event: pivot.staged, within: 2s }
  - expect: { booted: fixture:2, within: 2s }
  - assert: { booted: fixture:2, reboots: 1 }
`;

test('old-to-new passes: steps in order, guest events classified, everything cleaned up', async (t) => {
  const { result, events, world, steps } = await runText(OLD_TO_NEW);
  t.deepEqual(steps, [
    '✓ prepare',
    '✓ up',
    '✓ expect node1 ignition within 2s',
    '✓ expect node1 pivot.pulling within 2s',
    '✓ expect node1 pivot.staged within 2s',
    '✓ expect node1 booted fixture:2 within 2s',
    '✓ assert node1 booted fixture:2 reboots=1',
  ]);
  t.true(result.ok);
  t.is(result.exitCode, ExitCode.ok);
  t.deepEqual(
    result.nodes[0]!.boots.map((b) => b.version),
    ['1', '2'],
  );
  t.deepEqual(world.builds, ['devpivot/fixture-2']);
  t.is(world.host!.destroyAllCalls, 1, 'VMs removed');
  t.true(world.host!.closed);
  t.is(world.registry!.stops, 1, 'registry stopped');
  const kinds = events.map((e) => e.kind);
  t.is(kinds[0], 'run.start');
  t.is(kinds.at(-1), 'run.end');
  t.true(kinds.includes('guest.booted') && kinds.includes('guest.pivot') && kinds.includes('guest.ignition'));
  // the guest reports each phase once
  t.is(events.filter((e) => e.kind === 'guest.pivot' && e.phase === 'staged').length, 1);
});

test('the Ignition request names the target by digest at 10.0.2.2, with kernel args and extra config', async (t) => {
  const { world } = await runText(`nodes:
  node1:
    pivot: fixture:2
    kernel-args: { add: [a=1], delete: [quiet] }
    ignition: { storage: { files: [ { path: /etc/x } ] } }
steps: [up]
`);
  const [request] = world.ignition;
  t.regex(request?.sshKeys?.[0] ?? '', /^ssh-ed25519 \S+ devpivot-[0-9a-f]{8}$/, "the session's key for core");
  t.deepEqual(world.ignition, [
    {
      driver: 'legacy',
      // node1's own port of the registry (test/engine/node-ports.test.ts), not the main one (45678)
      image: `10.0.2.2:45679/devpivot/fixture-2@sha256:${'2'.repeat(64)}`,
      spec: '3.0.0',
      registry: { hostPort: '10.0.2.2:45679', insecure: true },
      kernelArgs: { add: ['a=1'], delete: ['quiet'] },
      sshKeys: request?.sshKeys,
      hostKeys: [{ type: 'ed25519', privateKey: 'FAKE PRIVATE 1\n', publicKey: 'ssh-ed25519 FAKE1' }],
      extra: { storage: { files: [{ path: '/etc/x' }] } },
    },
  ]);
});

test('each node gets host keys of its own, pinned under its domain before it boots; a node whose config writes host keys gets none', async (t) => {
  const { world } = await runText(`nodes:
  a: { pivot: fixture:2 }
  b: { pivot: fixture:2 }
  own:
    pivot: fixture:2
    ignition: { storage: { files: [ { path: /etc/ssh/ssh_host_ed25519_key } ] } }
steps: [up]
`);
  const byNode = (name: string) => world.ignition[['a', 'b', 'own'].indexOf(name)]!;
  const a = byNode('a').hostKeys?.[0]?.publicKey;
  const b = byNode('b').hostKeys?.[0]?.publicKey;
  t.regex(a ?? '', /^ssh-ed25519 FAKE\d$/);
  t.regex(b ?? '', /^ssh-ed25519 FAKE\d$/);
  t.not(a, b, 'each its own');
  t.is(byNode('own').hostKeys, undefined);
  const pinned = readFileSync(world.knownHosts!, 'utf8').trim().split('\n');
  t.is(pinned.length, 2, pinned.join('\n'));
  t.regex(pinned.find((line) => line.endsWith(` ${a}`)) ?? '', /^devpivot-[0-9a-f]{8}-a ssh-ed25519 FAKE\d$/);
  t.regex(pinned.find((line) => line.endsWith(` ${b}`)) ?? '', /^devpivot-[0-9a-f]{8}-b ssh-ed25519 FAKE\d$/);
});

test('native builds are zstd unless the scenario says otherwise or an mcd node (RHCOS 4.13 reads gzip only) is in it', async (t) => {
  const shapes = async (nodes: string, extra = '') =>
    (
      await runText(`oscontainers:
  n: { build: { fixture: 2, format: native } }
  g: { build: { fixture: 2, format: native, compression: gzip } }
  l: { build: { fixture: 2 } }
${extra}nodes:
${nodes}
steps: [up]
`)
    ).world.buildShapes;
  t.deepEqual(
    await shapes('  a: { driver: bootc, pivot: n }\n  b: { driver: rpm-ostree, pivot: g }\n  c: { pivot: l }'),
    [
      { repository: 'devpivot/n', format: 'native', compression: 'zstd' },
      { repository: 'devpivot/g', format: 'native', compression: 'gzip' },
      { repository: 'devpivot/l', format: undefined, compression: undefined },
    ],
  );
  const withMcd = await shapes('  a: { driver: bootc, pivot: n }\n  m: { driver: mcd, pivot: g }');
  t.like(withMcd[0], { repository: 'devpivot/n', compression: undefined }, 'gzip');
  t.like(withMcd[1], { repository: 'devpivot/g', compression: 'gzip' });
});

test('mcd nodes: the fixture MCO image is pushed once and named by digest; an mco-image is passed as written', async (t) => {
  const { world } = await runText(`nodes:
  a: { driver: mcd, pivot: fixture:2, kernel-args: { add: [a=1] } }
  b: { driver: mcd, pivot: fixture:2 }
  c: { driver: mcd, pivot: fixture:2, mco-image: quay.io/openshift/mco:4.13 }
  d: { driver: mcd }
steps: [up]
`);
  t.deepEqual(world.mcoPushes, ['devpivot-fixture/mco']);
  // Named at each node's own port of the registry (a: 45679, b: 45680).
  const fixtureMco = (port: number) => `10.0.2.2:${port}/devpivot-fixture/mco@sha256:${'m'.repeat(64)}`;
  t.deepEqual(
    world.ignition.map((request) => [request.driver, request.mcoImage, request.kernelArgs]),
    [
      ['mcd', fixtureMco(45679), { add: ['a=1'], delete: [] }],
      ['mcd', fixtureMco(45680), undefined],
      ['mcd', 'quay.io/openshift/mco:4.13', undefined],
      ['mcd', undefined, undefined],
    ],
  );
  t.is(world.ignition[0]?.image, `10.0.2.2:45679/devpivot/fixture-2@sha256:${'2'.repeat(64)}`);
});

test('follow: the tag is pointed at the pivot target before Ignition; bootc names the tag, legacy the digest', async (t) => {
  const { world } = await runText(`nodes:
  a: { driver: bootc, pivot: v2, follow: os/stream:stable }
  b: { driver: legacy, pivot: fixture:2, follow: os/old:stable }
oscontainers:
  v2: { build: { fixture: 2, format: native } }
steps: [up]
`);
  t.deepEqual(world.tags, [
    `devpivot/v2@sha256:${'2'.repeat(64)} -> os/stream:stable`,
    `devpivot/fixture-2@sha256:${'2'.repeat(64)} -> os/old:stable`,
  ]);
  t.deepEqual(
    world.ignition.map((request) => request.image),
    ['10.0.2.2:45679/os/stream:stable', `10.0.2.2:45680/devpivot/fixture-2@sha256:${'2'.repeat(64)}`],
  );
});

test('no mcd node without an mco-image: no MCO image is pushed', async (t) => {
  const { world } = await runText(`nodes:
  c: { driver: mcd, pivot: fixture:2, mco-image: 10.0.2.2:5000/mco@sha256:${'a'.repeat(64)} }
steps: [up]
`);
  t.deepEqual(world.mcoPushes, []);
});

test('every node gets the session key, its own ssh forward and a guest network filter', async (t) => {
  const { world } = await runText(`nodes:
  a: { pivot: fixture:2 }
  b: {}
steps:
  - up
`);
  t.is(world.ignition.length, 2);
  const keys = world.ignition.map((request) => request.sshKeys);
  t.deepEqual(keys[0], keys[1], 'one key per session, also for a node without a pivot target');
  const networks = world.host!.nodes.map((node) => node.spec.network);
  t.is(networks.length, 2);
  t.not(networks[0]?.sshPort, networks[1]?.sshPort);
  for (const network of networks) {
    t.true((network?.sshPort ?? 0) > 0);
    t.truthy(network?.filter?.fromGuest, 'the registry is on loopback: the guest network is filtered');
  }
});

test('an expectation that is not met fails at its deadline; later steps are skipped; cleanup runs', async (t) => {
  const started = Date.now();
  const { result, steps, world } = await runText(
    `nodes:
  node1: { pivot: fixture:2 }
steps:
  - up
  - expect: { event: stopped, within: 300ms }
  - assert: { booted: fixture:2 }
`,
  );
  t.false(result.ok);
  t.is(result.exitCode, ExitCode.failure);
  t.deepEqual(steps, [
    '✓ prepare',
    '✓ up',
    '✗ expect node1 stopped within 300ms: node1 stopped: not seen within 300ms',
  ]);
  t.deepEqual(
    result.steps.map((s) => s.status),
    ['passed', 'passed', 'failed', 'skipped'],
  );
  t.true(Date.now() - started < 3000);
  t.is(world.host!.destroyAllCalls, 1);
});

test('fail fast: a kernel panic fails the running step at once, not at its deadline', async (t) => {
  const started = Date.now();
  const { result, steps } = await runText(
    `nodes:
  node1: { pivot: fixture:2 }
steps:
  - up
  - expect: { booted: fixture:2, within: 5m }
`,
    {
      onBoot: (node) => {
        setTimeout(() => node.say('[    3.1] Kernel panic - not syncing: VFS: Unable to mount root fs'), 20);
        return true;
      },
    },
  );
  t.false(result.ok);
  t.is(
    steps.at(-1),
    '✗ expect node1 booted fixture:2 within 5m: node node1 failed: kernel panic: Kernel panic - not syncing: VFS: Unable to mount root fs',
  );
  t.true(Date.now() - started < 3000, 'did not wait for the 5m deadline');
  t.deepEqual(result.nodes[0]!.failures, [
    { reason: 'kernel panic: Kernel panic - not syncing: VFS: Unable to mount root fs', expected: false },
  ]);
});

test('a node whose boot Secure Boot refused is paused once the failure is named; a node failing otherwise is not', async (t) => {
  const { result, steps, events, world } = await runText(
    `nodes:
  refused: {}
  panicked: {}
steps:
  - up
  - expect: { node: refused, event: failure, match: shim, within: 2s }
  - expect: { node: panicked, event: failure, match: panic, within: 2s }
  - wait: 50ms
`,
    {
      onBoot: (node) => {
        const line =
          node.name === 'refused'
            ? 'error: bad shim signature.'
            : 'Kernel panic - not syncing: VFS: Unable to mount root fs';
        setTimeout(() => node.say(line), 20);
        return true;
      },
    },
  );
  t.true(result.ok, steps.join('\n'));
  const node = (name: string) => world.host!.nodes.find((n) => n.name === name)!;
  t.is(node('refused').pauses, 1);
  t.is(node('panicked').pauses, 0);
  const log = events.find((e) => e.kind === 'log' && e.message.startsWith('node refused paused'));
  t.truthy(log, 'the pause is said');
  t.regex((log as { message: string }).message, /virsh resume devpivot-test-engine-refused/);
});

test('a failure during a wait fails the wait at once', async (t) => {
  const started = Date.now();
  const { steps } = await runText(
    `nodes:
  node1: {}
steps:
  - up
  - wait: 1m
`,
    {
      onBoot: (node) => {
        setTimeout(() => node.say('You are in emergency mode. After logging in...'), 20);
        return true;
      },
    },
  );
  t.regex(steps.at(-1)!, /^✗ wait 1m: node node1 failed: emergency shell: You are in emergency mode/);
  t.true(Date.now() - started < 3000);
});

test('corrupt oscontainer: the expected failure is consumed and asserted; the node stays on v1', async (t) => {
  const { result, steps } = await runText(`nodes:
  node1: { pivot: fixture:2 }
steps:
  - fault: { registry: corrupt-blob }
  - up
  - expect: { event: pivot.pulling, within: 2s }
  - expect: { event: failure, match: digest, within: 2s }
  - wait: 50ms
  - assert: { booted: fixture:1, reboots: 0, failed: true }
`);
  t.true(result.ok, steps.join('\n'));
  t.deepEqual(result.nodes[0]!.failures, [{ reason: 'pull failed: digest mismatch', expected: true }]);
});

const CORRUPT_ONE_OF_TWO = `nodes:
  good: { pivot: fixture:2 }
  bad: { pivot: fixture:2 }
steps:
  - fault: { registry: corrupt-blob, node: bad }
  - up
  - expect: { node: good, booted: fixture:2, within: 3s }
  - STEP
  - expect: { node: bad, event: failure, match: digest, within: 2s }
  - assert: { node: bad, booted: fixture:1, reboots: 0, failed: true }
  - assert: { node: good, booted: fixture:2, failed: false }
`;

test('corrupt-blob for one node: only its pull fails; its failure waits for the later step that expects it', async (t) => {
  // The bad node fails long before the steps about the good node end: a later step expects that failure, so the
  // steps in between are not failed by it.
  const { result, steps } = await runText(CORRUPT_ONE_OF_TWO.replace('STEP', 'wait: 50ms'), { tick: 5 });
  t.true(result.ok, steps.join('\n'));
  t.deepEqual(
    result.nodes.map((node) => [node.name, node.failures]),
    [
      ['good', []],
      ['bad', [{ reason: 'pull failed: digest mismatch', expected: true }]],
    ],
  );
  t.true(steps.includes('✓ fault registry corrupt-blob for bad'), steps.join('\n'));
});

test('steps about a node that failed meanwhile pass on what its log already has, before the step that expects the failure', async (t) => {
  const { result, steps } = await runText(
    CORRUPT_ONE_OF_TWO.replace('STEP', 'expect: { node: bad, event: pivot.pulling, within: 1m }'),
    {
      tick: 5,
    },
  );
  t.true(result.ok, steps.join('\n'));
  t.true(steps.includes('✓ expect bad pivot.pulling within 1m'), steps.join('\n'));
});

test('a failure a later step expects still fails a step about that node at once', async (t) => {
  const started = Date.now();
  const { result, steps } = await runText(
    CORRUPT_ONE_OF_TWO.replace('STEP', 'expect: { node: bad, booted: fixture:2, within: 1m }'),
    { tick: 5 },
  );
  t.false(result.ok);
  t.regex(steps.at(-1)!, /^✗ expect bad booted fixture:2 within 1m: node bad failed: pull failed: digest mismatch/);
  t.true(Date.now() - started < 3000, 'at once, not at the deadline');
});

test('a failure no later step expects fails the running step at once', async (t) => {
  const { result, steps } = await runText(
    CORRUPT_ONE_OF_TWO.replace('STEP', 'wait: 1m')
      .replace(/ {2}- expect: \{ node: bad, event: failure.*\n/, '')
      .replace(/ {2}- assert: \{ node: bad.*\n/, ''),
    { tick: 5 },
  );
  t.false(result.ok);
  t.regex(
    steps.at(-1)!,
    /^✗ (expect good booted fixture:2 within 3s|wait 1m): node bad failed: pull failed: digest mismatch/,
  );
});

test('registry outage: down during the pull, up again, the guest retries and the pivot completes', async (t) => {
  const { result, steps, world } = await runText(
    `nodes:
  node1: { pivot: fixture:2 }
steps:
  - up
  - expect: { event: pivot.pulling, within: 2s }
  - fault: { registry: down }
  - wait: 30ms
  - fault: { registry: up }
  - expect: { booted: fixture:2, within: 3s }
  - assert: { booted: fixture:2, failed: false }
`,
    { tick: 5 },
  );
  t.true(result.ok, steps.join('\n'));
  t.true(world.registry!.stops >= 2, 'stopped by the fault and at the end');
});

test('power-off at a pivot phase, power back on: the node boots old and completes the pivot', async (t) => {
  const { result, steps, world } = await runText(`nodes:
  node1: { pivot: fixture:2 }
steps:
  - up
  - power-off: { when: staging, within: 2s }
  - expect: { event: booted, within: 2s }
  - expect: { booted: fixture:2, within: 3s }
  - assert: { booted: fixture:2, reboots: 2 }
`);
  t.true(result.ok, steps.join('\n'));
  t.deepEqual(
    result.nodes[0]!.boots.map((b) => b.version),
    ['1', '1', '2'],
  );
  t.is(world.host!.nodes[0]!.boots, 3);
});

test('two nodes pivot concurrently; an expectation met while waiting for the other still counts', async (t) => {
  const { result, steps } = await runText(`nodes:
  a: { pivot: fixture:2 }
  b: { pivot: fixture:2 }
steps:
  - up
  - expect: { node: b, booted: fixture:2, within: 3s }
  - expect: { node: a, booted: fixture:2, within: 3s }
  - expect: { node: a, event: pivot.staged, within: 100ms }
`);
  // a's staged came before a's booted fixture:2 (the cursor moved past it): the last step must fail
  t.false(result.ok);
  t.deepEqual(steps.slice(0, 4), [
    '✓ prepare',
    '✓ up',
    '✓ expect b booted fixture:2 within 3s',
    '✓ expect a booted fixture:2 within 3s',
  ]);
  t.regex(steps[4]!, /^✗ expect a pivot.staged/);
});

test('already at target: the guest skips the pivot and does not reboot', async (t) => {
  const { result, steps } = await runText(`nodes:
  node1: { image: fixture:2, pivot: fixture:2 }
steps:
  - up
  - expect: { event: pivot.skipped, within: 2s }
  - wait: 50ms
  - assert: { booted: fixture:2, reboots: 0 }
`);
  t.true(result.ok, steps.join('\n'));
});

test('Ctrl-C during a step: the step fails as interrupted and the VMs are removed', async (t) => {
  const controller = new AbortController();
  const { result, steps, world } = await runText(
    `nodes:
  node1: {}
steps:
  - up
  - wait: 1m
`,
    {
      signal: controller.signal,
      // Ctrl-C once the wait runs (not at a fixed time: set-up may take longer on a loaded machine)
      onEvent: (event) => {
        if (event.kind === 'step.start' && event.name === 'wait 1m')
          setTimeout(() => controller.abort(new Error('interrupted by SIGINT')), 50);
      },
    },
  );
  t.false(result.ok);
  t.is(steps.at(-1), '✗ wait 1m: interrupted (interrupted by SIGINT)');
  t.is(world.host!.destroyAllCalls, 1);
  t.true(world.host!.nodes[0]!.destroyed);
});

test('--keep leaves the VMs; the registry still stops', async (t) => {
  const { result, world } = await runText(OLD_TO_NEW, { keep: true });
  t.true(result.ok);
  t.true(result.kept);
  t.is(world.host!.destroyAllCalls, 0);
  t.false(world.host!.nodes[0]!.destroyed);
  t.is(world.registry!.stops, 1);
});

test('a set-up failure fails prepare with exit status 2 and skips every step', async (t) => {
  const { result, steps, world, stateDir } = await runText(OLD_TO_NEW, {
    startRegistryError: new DevpivotError('REGISTRY_LISTEN', 'cannot listen on 127.0.0.1:0', {
      hint: 'free a port',
      exitCode: ExitCode.usage,
    }),
  });
  t.is(result.exitCode, ExitCode.usage);
  t.deepEqual(steps, ['✗ prepare: cannot listen on 127.0.0.1:0 (hint: free a port)']);
  t.is(world.host, undefined);
  // prepare had begun the nodes' host keys in the session's directory: nothing of the session is left
  t.deepEqual(readdirSync(join(stateDir, 'sessions')), []);
});

test("the scenario's timeout stops the run", async (t) => {
  // 2 s, not less: the timeout counts from the start, and prepare (fakes) must end before it under load.
  const { result, steps } = await runText(`timeout: 2s
nodes:
  node1: {}
steps:
  - up
  - expect: { console: never printed }
`);
  t.false(result.ok);
  t.is(steps.at(-1), "✗ expect node1 console /never printed/ within 5m: the scenario's timeout of 2s ran out");
});

test('expect console matches raw lines; a down step removes the VMs', async (t) => {
  const { result, steps, world } = await runText(`nodes:
  node1: { pivot: fixture:2 }
steps:
  - up
  - expect: { console: 'Restarting system', within: 2s }
  - down
`);
  t.true(result.ok, steps.join('\n'));
  t.is(world.host!.destroyAllCalls, 2, 'the down step, then cleanup');
});

test('repository names and guest registry addresses', (t) => {
  t.is(repositoryName('fixture:2'), 'devpivot/fixture-2');
  t.is(repositoryName('New_OS'), 'devpivot/new-os');
  t.is(guestHostPort('http://127.0.0.1:5000'), '10.0.2.2:5000');
  t.is(guestHostPort('http://localhost:80'), '10.0.2.2:80');
  t.is(guestHostPort('https://registry.example.test'), 'registry.example.test:443');
});

test('a legacy pivot that stages and never reboots fails with the likely cause, not a timeout', async (t) => {
  const started = Date.now();
  const { result, steps } = await runText(
    `nodes:
  node1: { pivot: fixture:2 }
steps:
  - up
  - expect: { booted: fixture:2, within: 1m }
`,
    {
      stagedGraceMs: 300,
      onBoot: (node) => {
        // pivot's lines when /run/pivot/reboot-needed is missing: it stages, then exits without rebooting
        node.say(`I1201 20:40:01.000000    1234 root.go:333] Pivoting to: 2 (${'2'.repeat(64)})`);
        node.say('Staging deployment...done');
        return true;
      },
    },
  );
  t.false(result.ok);
  t.regex(
    steps.at(-1)!,
    /^✗ expect node1 booted fixture:2 within 1m: node node1 failed: the pivot staged 2 \(2+\) but node1 did not reboot within 300ms: pivot reboots only with --reboot or when \/run\/pivot\/reboot-needed exists/,
  );
  t.true(Date.now() - started < 10_000, 'long before the expect deadline');
});

test('a staged pivot that reboots in time is no failure', async (t) => {
  const { result, steps } = await runText(OLD_TO_NEW, { stagedGraceMs: 300 });
  t.true(result.ok, steps.join('\n'));
});
