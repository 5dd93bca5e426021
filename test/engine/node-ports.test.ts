/**
 * Per-node ports in the engine (docs/ARCHITECTURE.md "Per-node ports"): each node of an embedded-registry run gets
 * a registry port of its own, its Ignition names only that port (pullspec, trust drop-in, mirror location, MCO
 * image), and its guest filter lets it reach only that port. An external registry is one address for every node.
 */
import test from 'ava';
import { tempDir } from '../helpers/temp.js';
import { qemuSide, SYN, tcp } from '../vm/frames.js';
import { type FakeOptions, type FakeWorld, fakeDeps, runFakeScenario } from './fake.js';

const MAIN = 45678;
const DIGEST = `sha256:${'a'.repeat(64)}`;

async function run(text: string, options: FakeOptions = {}): Promise<{ world: FakeWorld; ok: boolean }> {
  const world = fakeDeps(options);
  const result = await runFakeScenario(world, text);
  return { world, ok: result.ok };
}

test('each node gets a port of its own, and its Ignition names that port only', async (t) => {
  const { world, ok } = await run(`nodes:
  a: { pivot: fixture:2 }
  b: { pivot: fixture:2 }
  m: { driver: mcd, pivot: fixture:2 }
  quiet: {}
steps: [up]
`);
  t.true(ok);
  t.deepEqual(
    [...world.registry!.nodePorts],
    [
      ['a', MAIN + 1],
      ['b', MAIN + 2],
      ['m', MAIN + 3],
      ['quiet', MAIN + 4],
    ],
    'every node, a pivot target or not, in the order of the scenario',
  );
  const target = `devpivot/fixture-2@sha256:${'2'.repeat(64)}`;
  const [a, b, m, quiet] = world.ignition;
  t.is(a?.image, `10.0.2.2:${MAIN + 1}/${target}`);
  t.deepEqual(a?.registry, { hostPort: `10.0.2.2:${MAIN + 1}`, insecure: true });
  t.is(b?.image, `10.0.2.2:${MAIN + 2}/${target}`);
  t.deepEqual(b?.registry, { hostPort: `10.0.2.2:${MAIN + 2}`, insecure: true });
  t.is(m?.image, `10.0.2.2:${MAIN + 3}/${target}`);
  t.is(m?.mcoImage, `10.0.2.2:${MAIN + 3}/devpivot-fixture/mco@sha256:${'m'.repeat(64)}`, 'the MCO image too');
  t.deepEqual(quiet?.registry, { hostPort: `10.0.2.2:${MAIN + 4}`, insecure: true });
  for (const request of world.ignition) t.false(JSON.stringify(request).includes(`:${MAIN}/`), 'never the main port');

  // Through the real generator: each config's files (the trust drop-in, the pivot target, the MCD units) name the
  // node's port, and no other registry port.
  const { realDeps } = await import('../../src/engine/real-deps.js');
  const deps = realDeps({ stateDir: tempDir('devpivot-test-state-'), env: {} });
  world.ignition.forEach((request, index) => {
    const config = JSON.stringify(deps.generateIgnition(request));
    const files = (JSON.parse(config) as { storage?: { files?: { path: string; contents: { source: string } }[] } })
      .storage?.files;
    const dropIn = files?.find((file) => file.path === '/etc/containers/registries.conf.d/50-devpivot.conf');
    t.true(decodeURIComponent(dropIn?.contents.source ?? '').includes(`location = "10.0.2.2:${MAIN + 1 + index}"`));
    const ports = new Set([...config.matchAll(/10\.0\.2\.2:(\d+)/g)].map((match) => Number(match[1])));
    t.deepEqual([...ports], [MAIN + 1 + index], `${request.driver} node ${index}: its port only`);
  });
});

test("mirror mode: the upstream name stays, the drop-in sends it to the node's own port", async (t) => {
  const { world, ok } = await run(`registry:
  mirror: [quay.io/openshift-release-dev]
  upstream: 'http://127.0.0.1:5999'
oscontainers:
  os: { pull: 'quay.io/openshift-release-dev/fixture@${DIGEST}' }
nodes:
  n1: { image: fixture:1, pivot: os }
  n2: { image: fixture:1, pivot: os }
steps: [up]
`);
  t.true(ok);
  const mirrors = [{ prefix: 'quay.io/openshift-release-dev', path: 'openshift-release-dev' }];
  t.deepEqual(
    world.ignition.map((request) => [request.image, request.registry]),
    [
      [
        `quay.io/openshift-release-dev/fixture@${DIGEST}`,
        { hostPort: `10.0.2.2:${MAIN + 1}`, insecure: true, mirrors },
      ],
      [
        `quay.io/openshift-release-dev/fixture@${DIGEST}`,
        { hostPort: `10.0.2.2:${MAIN + 2}`, insecure: true, mirrors },
      ],
    ],
  );
});

test("a node's guest filter passes connections to its own port only: not the main port, not another node's", async (t) => {
  const passed = new Map<string, number[]>();
  const errors: string[] = [];
  const { world, ok } = await run(
    `nodes:
  a: { pivot: fixture:2 }
  b: { pivot: fixture:2 }
steps:
  - up
  - expect: { node: a, booted: fixture:2, within: 10s }
  - expect: { node: b, booted: fixture:2, within: 10s }
`,
    {
      // While the node boots (its filter is up), play QEMU: a SYN to each registry port, see which the filter passes.
      async onBoot(node, boot) {
        if (boot !== 1) return false;
        try {
          const filter = node.spec.network?.filter;
          if (!filter) throw new Error(`${node.name} has no guest filter`);
          const qemu = await qemuSide({ sockets: filter });
          const ports = [MAIN, MAIN + 1, MAIN + 2];
          qemu.send(...ports.map((port) => tcp('10.0.2.2', 40000, port, SYN)));
          await new Promise((resolve) => setTimeout(resolve, 100));
          passed.set(
            node.name,
            qemu.host.map((frame) => frame.readUInt16BE(14 + 20 + 2)),
          );
          t.is(qemu.guest.length, 2, `${node.name}: the two other ports got a reset`);
          qemu.close();
        } catch (error) {
          errors.push(`${node.name}: ${(error as Error).message}`);
        }
        return false;
      },
    },
  );
  t.true(ok);
  t.deepEqual(errors, []);
  t.deepEqual(Object.fromEntries(passed), { a: [MAIN + 1], b: [MAIN + 2] });
  t.deepEqual([...world.registry!.nodePorts.values()], [MAIN + 1, MAIN + 2]);
});

test('an external registry: no node ports, every node names it as it is (its requests cannot be attributed)', async (t) => {
  const { world, ok } = await run(`registry: http://127.0.0.1:5000
nodes:
  a: { pivot: fixture:2 }
  b: { pivot: fixture:2 }
steps: [up]
`);
  t.true(ok);
  t.is(world.registry, undefined, 'no embedded registry');
  t.deepEqual(
    world.ignition.map((request) => [request.image, request.registry.hostPort]),
    [
      [`10.0.2.2:5000/devpivot/fixture-2@sha256:${'2'.repeat(64)}`, '10.0.2.2:5000'],
      [`10.0.2.2:5000/devpivot/fixture-2@sha256:${'2'.repeat(64)}`, '10.0.2.2:5000'],
    ],
  );
});
