/** `registry: { tls, auth }` and the nodes' `registry-ca: other` / `pull-secret: false` (scenario/node-trust.ts). */
import test from 'ava';
import { parseScenario, ScenarioError } from '../../src/scenario/parse.js';

const parse = (registry: string, node = '{}') =>
  parseScenario(`registry: ${registry}\nnodes: { n: ${node} }\n`, '/x.yaml');

test('tls and auth make the embedded registry secure, alone or with mirror mode', (t) => {
  t.deepEqual(parse('{ tls: true }').registry, { kind: 'embedded', tls: true });
  t.deepEqual(parse('{ tls: true, auth: true }').registry, { kind: 'embedded', tls: true, auth: true });
  t.deepEqual(parse('{ auth: true }').registry, { kind: 'embedded', auth: true });
  t.deepEqual(parse('{ tls: false }').registry, { kind: 'embedded' });
  t.deepEqual(parse('{ mirror: [quay.io/ns], tls: true }').registry, {
    kind: 'embedded',
    mirror: { prefixes: [{ prefix: 'quay.io/ns', path: 'ns' }] },
    tls: true,
  });
});

test('nodes take registry-ca: other and pull-secret: false', (t) => {
  const node = parse('{ tls: true, auth: true }', '{ registry-ca: other, pull-secret: false }').nodes[0]!;
  t.is(node.registryCa, 'other');
  t.is(node.pullSecret, false);
  const plain = parse('{ tls: true, auth: true }', '{ pull-secret: true }').nodes[0]!;
  t.is(plain.registryCa, undefined);
  t.is(plain.pullSecret, undefined);
});

test('refused with positions: tls with a url, a non-boolean, node keys without the registry feature', (t) => {
  const cases: [string, string, RegExp][] = [
    ["{ url: 'https://127.0.0.1:5000', tls: true }", '{}', /2?:?\d+:\d+.*'tls' is for the embedded registry/s],
    ['{ tls: yes-please }', '{}', /registry\.tls/],
    ['embedded', '{ registry-ca: other }', /registry-ca needs registry: \{ tls: true \}/],
    ['{ tls: true }', '{ pull-secret: false }', /pull-secret needs registry: \{ auth: true \}/],
    ['{ tls: true }', '{ registry-ca: mine }', /registry-ca/],
  ];
  for (const [registry, node, message] of cases) {
    const error = t.throws(() => parse(registry, node), { instanceOf: ScenarioError }, `${registry} ${node}`);
    t.regex(error?.message ?? '', message, error?.message);
    t.regex(error?.message ?? '', /\/x\.yaml:\d+:\d+/);
  }
});
