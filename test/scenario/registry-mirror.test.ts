/** `registry:` in mirror mode, next to the forms it must keep working (`embedded`, a URL, `{ url }`). */
import test from 'ava';
import { parseScenario, ScenarioError } from '../../src/scenario/parse.js';

const parse = (registry: string) => parseScenario(`registry: ${registry}\nnodes: { n: {} }\n`, '/x.yaml');

test('embedded, URL and { url } still parse as before', (t) => {
  t.deepEqual(parse('embedded').registry, { kind: 'embedded' });
  t.deepEqual(parse('http://127.0.0.1:5000').registry, { kind: 'external', url: 'http://127.0.0.1:5000' });
  t.deepEqual(parse("{ url: 'http://127.0.0.1:5000/' }").registry, { kind: 'external', url: 'http://127.0.0.1:5000' });
});

test('mirror: each prefix with the path the embedded registry holds it under; upstream without its slash', (t) => {
  const scenario = parse(
    "{ mirror: [quay.io/openshift-release-dev, 'localhost:5000/a/b', registry.example.test/x-y__z.w], upstream: 'http://127.0.0.1:5999/' }",
  );
  t.deepEqual(scenario.registry, {
    kind: 'embedded',
    mirror: {
      prefixes: [
        { prefix: 'quay.io/openshift-release-dev', path: 'openshift-release-dev' },
        { prefix: 'localhost:5000/a/b', path: 'a/b' },
        { prefix: 'registry.example.test/x-y__z.w', path: 'x-y__z.w' },
      ],
      upstream: 'http://127.0.0.1:5999',
    },
  });
});

test('mirror without upstream is mirror mode with no pull-through', (t) => {
  t.deepEqual(parse('{ mirror: [quay.io/ns] }').registry, {
    kind: 'embedded',
    mirror: { prefixes: [{ prefix: 'quay.io/ns', path: 'ns' }] },
  });
});

test('sibling paths are fine, nested ones are refused with both prefixes named', (t) => {
  t.notThrows(() => parse('{ mirror: [quay.io/a, quay.io/ab, quay.io/b/c] }'));
  const error = t.throws(() => parse('{ mirror: [quay.io/a/b, example.test/a] }'), { instanceOf: ScenarioError });
  t.regex(error?.message ?? '', /'example\.test\/a' overlaps 'quay\.io\/a\/b'/);
});

test('every bad prefix in the list is reported, not only the first', (t) => {
  const error = t.throws(() => parse('{ mirror: [nohost/a, quay.io/UPPER, quay.io] }'), { instanceOf: ScenarioError });
  t.is(error instanceof ScenarioError ? error.issues.length : 0, 3);
});

test('prefetch: false is kept on a mirrored pull with an upstream; a pull copies ahead by default', (t) => {
  const scenario = parseScenario(
    `registry: { mirror: [quay.io/ns], upstream: 'http://127.0.0.1:5999' }
oscontainers:
  lazy: { pull: 'quay.io/ns/os:2', prefetch: false }
  eager: { pull: 'quay.io/ns/os:2', prefetch: true }
  plain: { pull: 'quay.io/ns/os:2' }
nodes: { n: { pivot: lazy } }
`,
    '/x.yaml',
  );
  t.deepEqual(scenario.oscontainers.get('lazy'), { kind: 'pull', ref: 'quay.io/ns/os:2', prefetch: false });
  t.deepEqual(scenario.oscontainers.get('eager'), { kind: 'pull', ref: 'quay.io/ns/os:2' });
  t.deepEqual(scenario.oscontainers.get('plain'), { kind: 'pull', ref: 'quay.io/ns/os:2' });
});

test('prefetch: false with a broken registry section reports the registry only', (t) => {
  const error = t.throws(
    () =>
      parseScenario(
        `registry: { mirror: [nohost/a], upstream: 'http://127.0.0.1:5999' }
oscontainers:
  lazy: { pull: 'quay.io/ns/os:2', prefetch: false }
nodes: { n: { pivot: lazy } }
`,
        '/x.yaml',
      ),
    { instanceOf: ScenarioError },
  );
  const issues = error instanceof ScenarioError ? error.issues : [];
  t.is(issues.length, 1, issues.map((i) => i.message).join('\n'));
  t.regex(issues[0]?.message ?? '', /does not start with a registry host/);
});
