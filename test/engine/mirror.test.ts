/** Mirror mode in the engine: where a mirrored `pull:` is stored and pulled from, and what the guest is told. */
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { LoopbackRegistryOptions } from '../../src/engine/deps.js';
import { mirroredPull, underPaths } from '../../src/engine/mirror.js';
import { fakeDeps, runFakeScenario } from './fake.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const MIRROR = {
  prefixes: [
    { prefix: 'quay.io/openshift-release-dev', path: 'openshift-release-dev' },
    { prefix: 'registry.example.test/a/b', path: 'a/b' },
  ],
  upstream: 'http://127.0.0.1:5999',
};

test('a ref under a prefix is stored under its path, pulled from the upstream, named upstream in the guest', (t) => {
  t.deepEqual(mirroredPull(MIRROR, `quay.io/openshift-release-dev/ocp-release@${DIGEST}`), {
    repository: 'openshift-release-dev/ocp-release',
    source: `127.0.0.1:5999/openshift-release-dev/ocp-release@${DIGEST}`,
    guestName: 'quay.io/openshift-release-dev/ocp-release',
  });
  t.like(mirroredPull(MIRROR, 'registry.example.test/a/b/c/d:v2'), {
    repository: 'a/b/c/d',
    source: '127.0.0.1:5999/a/b/c/d:v2',
  });
  const { upstream: _, ...noUpstream } = MIRROR;
  t.is(
    mirroredPull(noUpstream, `quay.io/openshift-release-dev/os@${DIGEST}`)?.source,
    `quay.io/openshift-release-dev/os@${DIGEST}`,
  );
  t.is(
    mirroredPull(MIRROR, `quay.io/openshift-release-devx/os@${DIGEST}`),
    undefined,
    'a prefix matches whole components',
  );
  t.is(mirroredPull(MIRROR, `registry.example.test/a/os@${DIGEST}`), undefined);
  t.is(mirroredPull(undefined, `quay.io/openshift-release-dev/os@${DIGEST}`), undefined);
  t.true(underPaths(['a/b'], 'a/b/c'));
  t.false(underPaths(['a/b'], 'a/bc'));
});

test('a mirror-mode run: pull-through registry, filled through it, upstream pullspec and drop-in in Ignition', async (t) => {
  const world = fakeDeps();
  const started: LoopbackRegistryOptions[] = [];
  const start = world.deps.startRegistry;
  world.deps.startRegistry = (options) => {
    started.push(options);
    return start(options);
  };
  const text = `registry:
  mirror: [quay.io/openshift-release-dev]
  upstream: 'http://127.0.0.1:5999'
oscontainers:
  os: { pull: 'quay.io/openshift-release-dev/fixture@${DIGEST}' }
  local: { build: fixture:2 }
nodes:
  n1: { image: fixture:1, pivot: os }
  n2: { image: fixture:1, pivot: local }
steps:
  - up
`;
  const result = await runFakeScenario(world, text);
  t.is(result.exitCode, 0);
  t.deepEqual(started[0]?.pullThrough, { upstream: 'http://127.0.0.1:5999', paths: ['openshift-release-dev'] });
  // Filled by reading through the cache (layers too), not by a copy: the cache answers HEADs from the upstream.
  t.deepEqual(world.resolves, [
    {
      ref: `127.0.0.1:5999/openshift-release-dev/fixture@${DIGEST}`,
      upstream: 'http://127.0.0.1:5999',
      repository: 'openshift-release-dev/fixture',
      layers: true,
    },
  ]);
  t.deepEqual(world.pulls, []);
  const [n1, n2] = world.ignition;
  t.is(n1?.image, `quay.io/openshift-release-dev/fixture@${DIGEST}`, 'the guest keeps the upstream name, by digest');
  t.deepEqual(n1?.registry.mirrors, [{ prefix: 'quay.io/openshift-release-dev', path: 'openshift-release-dev' }]);
  t.regex(n2?.image ?? '', /^10\.0\.2\.2:\d+\/devpivot\/local@sha256:/, 'a built oscontainer keeps its devpivot name');
});

test('prefetch: false: nothing is copied ahead; the image is resolved through the cache and the guest pins it', async (t) => {
  const world = fakeDeps();
  const text = `registry:
  mirror: [quay.io/openshift-release-dev]
  upstream: 'http://127.0.0.1:5999'
oscontainers:
  lazy: { pull: 'quay.io/openshift-release-dev/fixture:2', prefetch: false }
  eager: { pull: 'quay.io/openshift-release-dev/other@${DIGEST}' }
nodes:
  n1: { image: fixture:1, pivot: lazy }
  n2: { image: fixture:1, pivot: eager }
steps:
  - up
`;
  const bus = new EventBus();
  const logs: string[] = [];
  bus.subscribe((event) => {
    if (event.kind === 'log') logs.push(event.message);
  });
  const result = await runFakeScenario(world, text, { bus });
  t.is(result.exitCode, 0);
  t.deepEqual(world.resolves, [
    {
      ref: '127.0.0.1:5999/openshift-release-dev/fixture:2',
      upstream: 'http://127.0.0.1:5999',
      repository: 'openshift-release-dev/fixture',
      layers: false,
    },
    {
      ref: `127.0.0.1:5999/openshift-release-dev/other@${DIGEST}`,
      upstream: 'http://127.0.0.1:5999',
      repository: 'openshift-release-dev/other',
      layers: true,
    },
  ]);
  t.deepEqual(world.pulls, [], 'nothing is copied');
  t.is(world.ignition[0]?.image, `quay.io/openshift-release-dev/fixture@sha256:${'e'.repeat(64)}`);
  t.true(logs.some((line) => /its layers are fetched from the upstream when a node first asks/.test(line)));
});
