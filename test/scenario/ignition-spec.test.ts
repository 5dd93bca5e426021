/** A node's `ignition-spec:`: the versions it takes, the default per driver, and how a fragment's version fits. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { DRIVERS } from '../../src/drivers/index.js';
import { nodeSpec, specRefusal } from '../../src/scenario/ignition-spec.js';
import { loadScenario, parseScenario } from '../../src/scenario/parse.js';
import { repoRoot } from '../helpers/cli.js';
import { problems } from './problems.js';

const specOf = (text: string) => parseScenario(text, 'x.yaml').nodes.map((node) => node.ignitionSpec);

test('without ignition-spec every driver writes 3.0.0, as every scenario has been given', async (t) => {
  t.deepEqual(
    specOf(`oscontainers:
  v2: { build: { fixture: 2, format: native } }
nodes:
  a: { pivot: fixture:2 }
  b: { driver: rpm-ostree, pivot: v2 }
  c: { driver: bootc, pivot: v2 }
`),
    ['3.0.0', '3.0.0', '3.0.0'],
  );
  for (const driver of ['legacy', 'rpm-ostree', 'bootc'] as const) t.is(DRIVERS[driver].specs.default, '3.0.0');
  const dir = join(repoRoot, 'scenarios');
  for (const name of readdirSync(dir).filter((file) => file.endsWith('.yaml'))) {
    const scenario = await loadScenario(join(dir, name));
    for (const node of scenario.nodes) t.is(node.ignitionSpec, '3.0.0', `${name} ${node.name}`);
  }
});

test('ignition-spec takes every version the generator writes, where the driver reads it', (t) => {
  for (const spec of ['3.0.0', '3.1.0', '3.2.0', '3.3.0', '2.2.0'])
    t.deepEqual(specOf(`nodes:\n  n: { ignition-spec: '${spec}' }\n`), [spec]);
  t.deepEqual(
    specOf(`oscontainers:
  v2: { build: { fixture: 2, format: native } }
nodes:
  n: { driver: bootc, pivot: v2, ignition-spec: 3.3.0 }
`),
    ['3.3.0'],
  );
});

test('an unknown version, or one the driver cannot take, is an issue at the value', (t) => {
  t.deepEqual(problems(`nodes:\n  n: { ignition-spec: 3.4.0 }\n`), [
    "2:23: node 'n' ignition-spec must be one of 2.2.0, 3.0.0, 3.1.0, 3.2.0, 3.3.0; got '3.4.0' (did you mean '3.0.0'?)",
  ]);
  t.deepEqual(problems(`nodes:\n  n: { driver: rpm-ostree, ignition-spec: 2.2.0 }\n`), [
    "2:43: node 'n' ignition-spec 2.2.0: the rpm-ostree driver's guests, Fedora CoreOS and RHCOS ≥ 4.12 (Ignition 2.x), read spec 3 only (one of 3.0.0, 3.1.0, 3.2.0, 3.3.0, or another driver)",
  ]);
  t.deepEqual(problems(`nodes:\n  n: { ignitionspec: 3.1.0 }\n`), [
    "2:8: unknown key 'ignitionspec' in node 'n' (did you mean 'ignition-spec'?)",
  ]);
});

test("a fragment's version must fit the node's spec; without one it is read as the node's spec", (t) => {
  t.deepEqual(
    problems(`nodes:
  n:
    ignition-spec: 3.1.0
    ignition: { ignition: { version: 3.2.0 } }
`),
    [
      "4:38: node 'n' ignition: the extra Ignition config (spec 3.2.0) is newer than the requested spec 3.1.0 (write a 3.x version not newer than ignition-spec 3.1.0, or leave ignition.version out)",
    ],
  );
  t.deepEqual(
    problems(`nodes:
  n:
    ignition-spec: 2.2.0
    ignition: { ignition: { version: 3.0.0 } }
`),
    [
      "4:38: node 'n' ignition: the extra Ignition config (spec 3.0.0) cannot be merged into a spec 2.2.0 config (write a 2.x version not newer than ignition-spec 2.2.0, or leave ignition.version out)",
    ],
  );
  // Read as 2.2.0: devpivot's spec 2 rules apply to a fragment without a version (a relative path is refused).
  t.deepEqual(
    problems(`nodes:
  n:
    ignition-spec: 2.2.0
    ignition: { storage: { files: [ { filesystem: root, path: etc/x } ] } }
`),
    ["4:63: node 'n' ignition is not valid Ignition 2.2.0: storage.files[0].path: must be absolute"],
  );
  // A spec 2 fragment on a driver whose guests read spec 3 only.
  t.deepEqual(
    problems(`oscontainers:
  v2: { build: { fixture: 2, format: native } }
nodes:
  n: { driver: bootc, pivot: v2, ignition: { ignition: { version: 2.2.0 } } }
`),
    [
      "4:67: node 'n' ignition is spec 2.2.0: the bootc driver's guests, bootc images with Ignition (Fedora CoreOS ≥ 41, Ignition 2.x), read spec 3 only (write ignition.version 3.0.0, 3.1.0, 3.2.0, 3.3.0, or leave it out)",
    ],
  );
});

test("without ignition-spec a newer fragment raises the node's spec; an older one does not lower it", (t) => {
  t.deepEqual(specOf(`nodes:\n  n: { ignition: { ignition: { version: 3.2.0 } } }\n`), ['3.2.0']);
  t.deepEqual(specOf(`nodes:\n  n: { ignition: { ignition: { version: 2.2.0 } } }\n`), ['2.2.0']);
  t.deepEqual(specOf(`nodes:\n  n: { ignition: { storage: {} } }\n`), ['3.0.0']);
  t.deepEqual(
    specOf(`nodes:\n  n: { ignition-spec: 3.3.0, ignition: { ignition: { version: 3.1.0 } } }\n`),
    ['3.3.0'],
    'an older 3.x fragment is merged into the newer spec',
  );
  t.is(nodeSpec('legacy', undefined, '3.3.0'), '3.3.0');
  t.is(nodeSpec('legacy', '3.1.0', undefined), '3.1.0');
  t.is(nodeSpec('rpm-ostree', undefined, undefined), '3.0.0');
  t.is(specRefusal('legacy', '2.2.0'), undefined);
  t.regex(specRefusal('rpm-ostree', '2.2.0') ?? '', /read spec 3 only/);
});
