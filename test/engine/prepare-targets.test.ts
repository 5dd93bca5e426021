/**
 * What prepare hands each node: its Ignition spec (`ignition-spec:` or the driver's default) and, for a pivot
 * target written as a pullspec, the copy in the embedded registry, pinned by digest at 10.0.2.2.
 */
import test from 'ava';
import { localEnvironment } from '../../src/scenario/environment.js';
import { tempDir } from '../helpers/temp.js';
import { fakeDeps, runFakeScenario } from './fake.js';

async function prepared(text: string) {
  const world = fakeDeps();
  const result = await runFakeScenario(world, text, { env: localEnvironment() });
  return { world, result };
}

test("each node's Ignition is requested in its own spec, the driver's default without ignition-spec", async (t) => {
  const { world, result } = await prepared(`oscontainers:
  v2: { build: { fixture: 2, format: native } }
nodes:
  old: { pivot: fixture:2, ignition-spec: 2.2.0 }
  plain: {}
  newer: { driver: rpm-ostree, pivot: v2, ignition-spec: 3.3.0 }
  raised: { ignition: { ignition: { version: 3.2.0 } } }
steps: [up]
`);
  t.true(result.ok);
  t.deepEqual(
    world.ignition.map((request) => [request.driver, request.spec]),
    [
      ['legacy', '2.2.0'],
      ['legacy', '3.0.0'],
      ['rpm-ostree', '3.3.0'],
      ['legacy', '3.2.0'],
    ],
  );
});

test('the real generator writes the requested spec, merging a fragment without a version as that spec', async (t) => {
  const { realDeps } = await import('../../src/engine/real-deps.js');
  const deps = realDeps({ stateDir: tempDir('devpivot-test-state-'), env: {} });
  const registry = { hostPort: '10.0.2.2:5000', insecure: true };
  const extra = { storage: { files: [{ filesystem: 'root', path: '/etc/motd', contents: { source: 'data:,hi' } }] } };
  const old = deps.generateIgnition({ driver: 'legacy', spec: '2.2.0', registry, extra }) as {
    ignition: { version: string };
    storage: { files: { path: string }[] };
  };
  t.is(old.ignition.version, '2.2.0');
  t.true(old.storage.files.some((file) => file.path === '/etc/motd'));
  const newer = deps.generateIgnition({ driver: 'legacy', spec: '3.3.0', registry }) as {
    ignition: { version: string };
  };
  t.is(newer.ignition.version, '3.3.0');
});

test('a pullspec target is pulled into the registry and the guest gets that copy, pinned by digest', async (t) => {
  const digest = `sha256:${'a'.repeat(64)}`;
  const { world, result } = await prepared(`nodes:
  pinned: { pivot: '127.0.0.1:5000/os/rhcos@${digest}' }
  tagged: { pivot: localhost:5000/os/rhcos:v2 }
steps: [up]
`);
  t.true(result.ok);
  t.deepEqual(world.pulls, [
    { ref: `127.0.0.1:5000/os/rhcos@${digest}`, repository: 'devpivot/os/rhcos' },
    { ref: 'localhost:5000/os/rhcos:v2', repository: 'devpivot/os/rhcos' },
  ]);
  t.deepEqual(world.builds, [], 'nothing built');
  // 127.0.0.1 on the host is not the guest's: it gets the embedded registry's copy, by digest (the tag resolved).
  t.deepEqual(
    world.ignition.map((request) => request.image),
    // each at its node's own port of the registry
    [`10.0.2.2:45679/devpivot/os/rhcos@${digest}`, `10.0.2.2:45680/devpivot/os/rhcos@sha256:${'f'.repeat(64)}`],
  );
});

test("a pivot step's pullspec is pulled in prepare too, before any node starts", async (t) => {
  const digest = `sha256:${'b'.repeat(64)}`;
  // The expect fails first, so the pivot step itself (ssh) never runs: only prepare is looked at.
  const { world } = await prepared(`nodes:
  n: { pivot: fixture:2 }
steps:
  - up
  - expect: { console: never printed, within: 50ms }
  - pivot: { to: 'quay.io/org/os@${digest}', within: 1s }
`);
  t.deepEqual(world.pulls, [{ ref: `quay.io/org/os@${digest}`, repository: 'devpivot/org/os' }]);
  t.deepEqual(world.builds, ['devpivot/fixture-2']);
});
