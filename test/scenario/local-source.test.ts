/**
 * Local images in a scenario (`pull:`, a pivot target, `--os-image`): containers-storage:, oci-archive:, oci:,
 * their paths made absolute against the scenario's directory (the caller's for --os-image), and checked through
 * the environment before anything starts, the issue at the value.
 */
import test from 'ava';
import { repositoryName } from '../../src/engine/world.js';
import { parseLocalSource } from '../../src/oci/local-source.js';
import { checkOsImage, overrideOsImage } from '../../src/scenario/os-image.js';
import { parseScenario, ScenarioError } from '../../src/scenario/parse.js';
import { fakeEnvironment } from './environment.js';

const seen: string[] = [];
const env = fakeEnvironment(
  {},
  {
    localImageProblem: (source) => {
      seen.push(JSON.stringify(source));
      return source.transport === 'oci-archive' && source.path.endsWith('two.ociarchive')
        ? { message: 'holds 2 images (refs: a, b)', hint: 'add :REF' }
        : undefined;
    },
  },
);

test('pull: and a pivot target take a local image; a relative path starts at the scenario file', (t) => {
  const scenario = parseScenario(
    `oscontainers:
  v2: { pull: 'oci-archive:build/os.ociarchive:v2' }
nodes:
  a: { pivot: v2 }
  b: { pivot: 'containers-storage:localhost/os:dev' }
  c: { pivot: 'oci:layout' }
`,
    '/work/s/x.yaml',
    env,
  );
  t.deepEqual(scenario.oscontainers.get('v2'), { kind: 'pull', ref: 'oci-archive:/work/s/build/os.ociarchive:v2' });
  t.deepEqual(scenario.oscontainers.get('containers-storage:localhost/os:dev'), {
    kind: 'pull',
    ref: 'containers-storage:localhost/os:dev',
  });
  t.deepEqual(scenario.oscontainers.get('oci:layout'), { kind: 'pull', ref: 'oci:/work/s/layout' });
  t.true(seen.includes(JSON.stringify({ transport: 'oci', path: '/work/s/layout' })));
  // Each gets a repository of its own in the embedded registry.
  t.is(repositoryName('containers-storage:localhost/os:dev'), 'devpivot/local/localhost/os');
  t.is(repositoryName('oci:layout'), 'devpivot/local/layout');
});

test("the environment's problem with a local image is an issue at the value, before anything starts", (t) => {
  const error = t.throws(() =>
    parseScenario(`nodes:\n  n: { pivot: 'oci-archive:/x/two.ociarchive' }\n`, '/work/s/x.yaml', env),
  ) as ScenarioError;
  t.true(error instanceof ScenarioError);
  t.like(error.issues[0], { line: 2, col: 15, hint: 'add :REF' });
  t.regex(error.issues[0]!.message, /holds 2 images \(refs: a, b\)/);
  t.throws(() => parseScenario(`oscontainers:\n  v: { pull: 'oci:' }\nnodes:\n  n: { pivot: v }\n`, 'x.yaml', env), {
    message: /names no image/,
  });
});

test('--os-image takes a local image, its path relative to where devpivot runs', (t) => {
  t.is(checkOsImage('oci-archive:os.ociarchive'), `oci-archive:${process.cwd()}/os.ociarchive`);
  t.is(checkOsImage('containers-storage:localhost/x:y'), 'containers-storage:localhost/x:y');
  const text = overrideOsImage('nodes:\n  n: { pivot: fixture:2 }\n', 'x.yaml', checkOsImage('oci:/l:v3'));
  t.deepEqual(parseScenario(text, 'x.yaml', env).oscontainers.get('oci:/l:v3'), { kind: 'pull', ref: 'oci:/l:v3' });
});

test('a path and its REF split at the first colon, as containers/image splits them', (t) => {
  t.deepEqual(parseLocalSource('oci:/a/b:c:d'), { transport: 'oci', path: '/a/b', ref: 'c:d' });
  t.deepEqual(parseLocalSource('containers-storage:localhost:5000/x:y'), {
    transport: 'containers-storage',
    image: 'localhost:5000/x:y',
  });
  t.is(parseLocalSource('docker://quay.io/x'), undefined);
  t.is(parseLocalSource('quay.io/x:y'), undefined);
});
