/**
 * The recipe for a new pivot driver: its own definition, one entry in src/drivers/index.ts. Here the entry is
 * added at run time (this file's worker only), and nothing else is touched: scenario validation, the Ignition
 * generator, the ssh pivot request, the staged watchdog and a run over the fake engine all take the new driver.
 */
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';
import type { DriverDefinition } from '../../src/drivers/definition.js';
import { DRIVERS, type PivotDriver, pivotDrivers } from '../../src/drivers/index.js';
import { runScenario } from '../../src/engine/engine.js';
import { pivotRequestScript } from '../../src/engine/ssh-pivot.js';
import { StagedWatchdog } from '../../src/engine/staged-watchdog.js';
import { generateIgnition } from '../../src/ignition/generate.js';
import { localEnvironment } from '../../src/scenario/environment.js';
import { parseScenario } from '../../src/scenario/parse.js';
import { fakeDeps } from '../engine/fake.js';
import { tempDir } from '../helpers/temp.js';
import { problems } from '../scenario/problems.js';

const fake: DriverDefinition = {
  formats: ['native'],
  specs: { default: '3.1.0', majors: [3], guests: 'the fake guests' },
  kernelArgs: { add: true, delete: false, refusal: { message: 'of the fake driver only add' } },
  nodeKeys: [],
  readsZstdLayers: true,
  pullSecretPaths: ['/etc/fake/auth.json'],
  fragment: (image, kernelArgs) => ({
    files: [
      { path: '/etc/fake/target', contents: `${image} ${kernelArgs.map((k) => k.arg).join(',')}\n`, mode: 0o644 },
    ],
    units: [{ name: 'fake-pivot.service', enabled: true, contents: '[Service]\nExecStart=/bin/true\n' }],
    users: [],
  }),
  secondRequest: (pullspec, quote) => [`fake-pivot ${quote(pullspec)}`],
  noRebootReason: ({ what }) => `${what}: the fake guest never reboots`,
  rollback: { request: () => ['fake-rollback'], written: /^fake: rolled back$/m },
  upgrade: { follows: 'tag', request: () => ['fake-upgrade'], later: { refused: 'the fake tool applies at once' } },
};
(DRIVERS as Record<string, DriverDefinition>).fake = fake;
const FAKE = 'fake' as PivotDriver;

test('the added driver is listed and validated: its formats, kernel-argument capability, specs and node keys', (t) => {
  t.true(pivotDrivers().includes(FAKE));
  const scenario = parseScenario(
    `oscontainers:
  v2n: { build: { fixture: 2, format: native } }
nodes:
  n: { driver: fake, pivot: v2n, kernel-args: { add: [a=1] } }
`,
    'x.yaml',
  );
  t.like(scenario.nodes[0], { driver: FAKE, ignitionSpec: '3.1.0' });
  t.deepEqual(problems('nodes:\n  n: { driver: fake, pivot: fixture:2 }\n'), [
    "2:29: node 'n' cannot pivot to 'fixture:2': the fake driver takes native oscontainers; this one is built in the legacy format (pick another driver or target)",
  ]);
  t.deepEqual(problems('nodes:\n  n: { driver: fake, kernel-args: { delete: [quiet] } }\n'), [
    "2:35: node 'n' kernel-args of the fake driver only add",
  ]);
  t.deepEqual(problems('nodes:\n  n: { driver: fake, mco-image: r:1/mco }\n'), [
    "2:22: node 'n' mco-image needs driver: mcd",
  ]);
});

test("the added driver's fragment is rendered; its second request and no-reboot reason are used", (t) => {
  const config = generateIgnition({ driver: FAKE, image: 'r:1/os@sha256:1', kernelArgs: ['ADD:a=1'] }) as unknown as {
    storage: { files: Array<{ path: string }> };
    systemd: { units: Array<{ name: string }> };
  };
  t.true(config.storage.files.some((f) => f.path === '/etc/fake/target'));
  t.true(config.systemd.units.some((u) => u.name === 'fake-pivot.service'));
  t.regex(pivotRequestScript(FAKE, "r:1/os'x", 'v3'), /^fake-pivot 'r:1\/os'\\''x'$/m);

  const bus = new EventBus();
  const failures: string[] = [];
  bus.subscribe((event) => {
    if (event.kind === 'guest.failure') failures.push(event.reason);
  });
  const dog = new StagedWatchdog(bus, new Map([['n', FAKE]]), 1);
  dog.observe({ kind: 'guest.pivot', node: 'n', phase: 'staged', target: 'v3' } as Stamped);
  return new Promise<void>((resolve) =>
    setTimeout(() => {
      dog.dispose();
      t.deepEqual(failures.length, 1);
      t.regex(failures[0] ?? '', /the fake guest never reboots$/);
      resolve();
    }, 50),
  );
});

test('a scenario of the added driver runs over the fake engine', async (t) => {
  const world = fakeDeps();
  const bus = new EventBus();
  const failed: string[] = [];
  bus.subscribe((event) => {
    if (event.kind === 'step.fail') failed.push(event.error);
  });
  const result = await runScenario({
    scenario: parseScenario(
      `oscontainers:
  v2n: { build: { fixture: 2, format: native } }
nodes:
  n: { driver: fake, pivot: v2n }
steps:
  - up
  - expect: { event: ignition, within: 2s }
  - expect: { event: pivot.pulling, within: 2s }
`,
      '/tmp/test.yaml',
      localEnvironment({ fixture: { versions: ['1', '2'], bootable: ['1', '2'] } }),
    ),
    deps: world.deps,
    bus,
    signal: new AbortController().signal,
    keep: false,
    stateDir: tempDir('devpivot-test-state-'),
    cacheDir: '/tmp/devpivot-test-cache',
  });
  t.deepEqual(failed, []);
  t.is(result.exitCode, 0);
  t.like(world.ignition[0], { driver: FAKE, spec: '3.1.0' });
});
