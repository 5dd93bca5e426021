/** `devpivot up --tls --auth` on a scenario's text (scenario/registry-override.ts). */
import test from 'ava';
import { parseScenario } from '../../src/scenario/parse.js';
import { overrideRegistryTrust } from '../../src/scenario/registry-override.js';

const both = { tls: true, auth: true };

test('no registry: one line appended; embedded: replaced in place; a mapping gets the keys', (t) => {
  const plain = 'nodes:\n  n: {}\n';
  const out = overrideRegistryTrust(plain, 'x.yaml', both);
  t.is(out, `${plain}registry: { tls: true, auth: true }\n`);
  t.deepEqual(parseScenario(out, '/x.yaml').registry, { kind: 'embedded', tls: true, auth: true });
  const embedded = overrideRegistryTrust('registry: embedded # the default\nnodes: { n: {} }\n', 'x.yaml', {
    tls: true,
  });
  t.is(embedded, 'registry: { tls: true } # the default\nnodes: { n: {} }\n');
  const mirror = overrideRegistryTrust('registry:\n  mirror: [quay.io/ns]\nnodes: { n: {} }\n', 'x.yaml', both);
  t.deepEqual(parseScenario(mirror, '/x.yaml').registry, {
    kind: 'embedded',
    mirror: { prefixes: [{ prefix: 'quay.io/ns', path: 'ns' }] },
    tls: true,
    auth: true,
  });
  t.is(overrideRegistryTrust(plain, 'x.yaml', { tls: false }), plain, 'nothing asked, nothing changed');
});

test('an external registry is a usage error naming the file', (t) => {
  const error = t.throws(() =>
    overrideRegistryTrust("registry: 'http://127.0.0.1:5000'\nnodes: { n: {} }\n", 'ext.yaml', { tls: true }),
  );
  t.regex(error?.message ?? '', /--tls make devpivot's embedded registry secure; ext\.yaml uses an external registry/);
});
