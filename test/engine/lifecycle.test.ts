/** The engine's end of a run: exit statuses by cause, what an abort during `up` leaves, kept runs, emergencies. */
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import { DevpivotError } from '../../src/core/errors.js';
import { runScenario, runScenarioServing } from '../../src/engine/engine.js';
import { localEnvironment } from '../../src/scenario/environment.js';
import { parseScenario } from '../../src/scenario/parse.js';
import type { NodeSpec, VmNode } from '../../src/vm/host.js';
import { tempDir } from '../helpers/temp.js';
import { type FakeOptions, fakeDeps } from './fake.js';

const SCENARIO =
  'nodes:\n  node1: { pivot: fixture:2 }\nsteps:\n  - up\n  - expect: { booted: fixture:2, within: 5s }\n';

function options(world: ReturnType<typeof fakeDeps>, signal: AbortSignal, extra: object = {}) {
  return {
    scenario: parseScenario(SCENARIO, '/tmp/lifecycle.yaml', localEnvironment()),
    deps: world.deps,
    bus: new EventBus(),
    signal,
    stateDir: tempDir('devpivot-test-state-'),
    cacheDir: '/tmp/devpivot-test-cache',
    ...extra,
  };
}

test('an interruption exits with the exit status its reason carries (143 for SIGTERM)', async (t) => {
  const controller = new AbortController();
  const world = fakeDeps({ tick: 20 });
  // On the node's start, not after a fixed delay: under load a timer could fire before there is a host.
  const bus = new EventBus();
  bus.on('vm.started', () =>
    setTimeout(() => controller.abort(new DevpivotError('ABORTED', 'interrupted by SIGTERM', { exitCode: 143 })), 10),
  );
  const result = await runScenario(options(world, controller.signal, { bus }));
  t.is(result.exitCode, 143);
  t.true(world.host!.nodes.length > 0);
  t.true(world.host!.nodes.every((node) => node.destroyed));
});

test('a bug in prepare (not a DevpivotError) is exit status 1; a set-up error is 2 whatever its own', async (t) => {
  const bug = await runScenario(
    options(
      fakeDeps({ startRegistryError: new TypeError('undefined is not a function') }),
      new AbortController().signal,
    ),
  );
  t.is(bug.exitCode, 1);
  const setup = await runScenario(
    options(
      fakeDeps({ startRegistryError: new DevpivotError('OSTREE_FAILED', 'ostree failed', { exitCode: 1 }) }),
      new AbortController().signal,
    ),
  );
  t.is(setup.exitCode, 2);
});

/** The fake host's createNode, wrapped: `wrap` gets the real one and returns the replacement. */
function wrapCreateNode(
  world: ReturnType<typeof fakeDeps>,
  wrap: (create: (spec: NodeSpec) => Promise<VmNode>) => (spec: NodeSpec) => Promise<VmNode>,
): void {
  const deps = world.deps;
  const openHost = deps.openHost;
  deps.openHost = async (o) => {
    const host = await openHost(o);
    host.createNode = wrap(host.createNode.bind(host));
    return host;
  };
}

test('an abort while the node is being defined: the node that came into being is still removed', async (t) => {
  const controller = new AbortController();
  const world = fakeDeps({});
  // A creation that does not notice the abort and finishes after it (what withDeadline must wait for).
  wrapCreateNode(world, (create) => async (spec) => {
    controller.abort(new Error('Ctrl-C'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    return create(spec);
  });
  const result = await runScenario(options(world, controller.signal));
  t.false(result.ok);
  t.is(world.host!.nodes.length, 1);
  t.true(world.host!.nodes[0]!.destroyed, 'cleanup found and removed it');
});

test('a kept run, served: the registry and the host stay until release, which removes the VMs', async (t) => {
  const world = fakeDeps({});
  const { result, kept } = await runScenarioServing(options(world, new AbortController().signal, { keep: true }));
  t.true(result.ok);
  t.truthy(kept);
  t.deepEqual(
    kept!.nodes.map((node) => node.name),
    ['node1'],
  );
  t.is(world.registry!.stops, 0, 'the registry still serves');
  t.false(world.host!.closed);
  t.false(world.host!.nodes[0]!.destroyed);
  await kept!.release({ remove: true });
  t.true(world.host!.nodes[0]!.destroyed);
  t.true(world.host!.closed);
  t.is(world.registry!.stops, 1);
});

test('the emergency hook removes what exists while the run is on, and is gone after it', async (t) => {
  const world = fakeDeps({ tick: 20 } satisfies FakeOptions);
  const hooks = new Set<() => Promise<void>>();
  const controller = new AbortController();
  let during = 0;
  const run = runScenario(
    options(world, controller.signal, {
      onEmergency: (hook: () => Promise<void>) => {
        hooks.add(hook);
        return () => hooks.delete(hook);
      },
    }),
  );
  while (!world.host?.nodes.length) await new Promise((resolve) => setTimeout(resolve, 5));
  during = hooks.size;
  for (const hook of hooks) await hook();
  t.true(world.host.destroyAllCalls >= 1);
  controller.abort(new Error('Ctrl-C'));
  await run;
  t.is(during, 1);
  t.is(hooks.size, 0);
});

test('--keep does not claim a node that never started: it is removed, and the kept run lists none', async (t) => {
  const world = fakeDeps({});
  // Defined, then dead at start (a remote host whose KVM does not work).
  wrapCreateNode(world, (create) => async (spec) => {
    const node = await create(spec);
    node.start = async () => {
      throw new DevpivotError('VM_NOT_RUNNING', 'kvm_buf_set_msrs: Assertion failed');
    };
    return node;
  });
  const { result, kept } = await runScenarioServing(options(world, new AbortController().signal, { keep: true }));
  t.false(result.ok);
  t.deepEqual(kept?.nodes ?? [], []);
  t.true(world.host!.nodes[0]!.destroyed, 'the never-started node is not left behind');
  t.is(result.nodes[0]?.domain, undefined);
  await kept?.release({ remove: true });
});
