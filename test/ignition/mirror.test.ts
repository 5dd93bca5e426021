/** Mirror mode's registries.conf.d drop-in: its exact text, TOML that parses to the intended tables, valid Ignition. */
import test from 'ava';
import { execa } from 'execa';
import { generateIgnition } from '../../src/ignition/generate.js';
import { MIRROR_DROP_IN, mirrorDropIn } from '../../src/ignition/mirror-fragment.js';
import { decodeDataUrl, type IgnitionConfig } from '../../src/ignition/render.js';
import { runIgnitionValidate } from '../../src/ignition/validate.js';

const MIRRORS = [
  { prefix: 'quay.io/openshift-release-dev', path: 'openshift-release-dev' },
  { prefix: 'registry.example.test:8443/a/b', path: 'a/b' },
];
const IMAGE = `quay.io/openshift-release-dev/ocp-release@sha256:${'c'.repeat(64)}`;

const fileText = (config: IgnitionConfig, path: string) => {
  const file = ((config.storage as { files?: { path: string; contents?: { source?: string } }[] }).files ?? []).find(
    (f) => f.path === path,
  );
  return file?.contents?.source === undefined ? undefined : decodeDataUrl(file.contents.source);
};

test('one [[registry]] per prefix, digest only, its [[registry.mirror]] at the embedded registry under the path', (t) => {
  t.is(
    mirrorDropIn(MIRRORS, '10.0.2.2:5000', true),
    [
      '# devpivot mirror mode: digest pulls under these prefixes go to the embedded registry; tags go upstream',
      '',
      '[[registry]]',
      'prefix = "quay.io/openshift-release-dev"',
      'location = "quay.io/openshift-release-dev"',
      'mirror-by-digest-only = true',
      '',
      '[[registry.mirror]]',
      'location = "10.0.2.2:5000/openshift-release-dev"',
      'insecure = true',
      '',
      '[[registry]]',
      'prefix = "registry.example.test:8443/a/b"',
      'location = "registry.example.test:8443/a/b"',
      'mirror-by-digest-only = true',
      '',
      '[[registry.mirror]]',
      'location = "10.0.2.2:5000/a/b"',
      'insecure = true',
      '',
    ].join('\n'),
  );
  t.notRegex(mirrorDropIn(MIRRORS, '10.0.2.2:5000', false), /insecure/, 'a TLS registry is not marked insecure');
});

test('the drop-in is TOML with the tables containers/image reads (parsed by Python tomllib)', async (t) => {
  const text = mirrorDropIn(MIRRORS, '10.0.2.2:5000', true);
  const { stdout } = await execa(
    'python3',
    ['-c', 'import json,sys,tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))'],
    {
      input: text,
    },
  );
  t.deepEqual(JSON.parse(stdout), {
    registry: [
      {
        prefix: 'quay.io/openshift-release-dev',
        location: 'quay.io/openshift-release-dev',
        'mirror-by-digest-only': true,
        mirror: [{ location: '10.0.2.2:5000/openshift-release-dev', insecure: true }],
      },
      {
        prefix: 'registry.example.test:8443/a/b',
        location: 'registry.example.test:8443/a/b',
        'mirror-by-digest-only': true,
        mirror: [{ location: '10.0.2.2:5000/a/b', insecure: true }],
      },
    ],
  });
});

for (const spec of ['3.0.0', '3.3.0']) {
  test(`a mirror-mode config (spec ${spec}) keeps the upstream pullspec and passes ignition-validate`, async (t) => {
    const config = generateIgnition({
      driver: 'legacy',
      image: IMAGE,
      spec,
      registry: { hostPort: '10.0.2.2:5000', insecure: true, mirrors: MIRRORS },
    });
    t.is(fileText(config, MIRROR_DROP_IN), mirrorDropIn(MIRRORS, '10.0.2.2:5000', true));
    t.is(fileText(config, '/etc/pivot/image-pullspec'), `${IMAGE}\n`);
    t.regex(fileText(config, '/etc/containers/registries.conf.d/50-devpivot.conf') ?? '', /10\.0\.2\.2:5000/);
    const result = await runIgnitionValidate(config);
    t.true(result.checked, 'ignition-validate must be installed');
    t.true(result.ok, result.output);
  });
}

test('without mirrors there is no drop-in; spec 2 (v1 registries.conf) refuses mirror mode', (t) => {
  const plain = generateIgnition({ driver: 'legacy', registry: { hostPort: '10.0.2.2:5000', insecure: true } });
  t.is(fileText(plain, MIRROR_DROP_IN), undefined);
  const error = t.throws(() =>
    generateIgnition({
      driver: 'legacy',
      spec: '2.2.0',
      registry: { hostPort: '10.0.2.2:5000', insecure: true, mirrors: MIRRORS },
    }),
  );
  t.is((error as { code?: string }).code, 'IGNITION_MIRROR');
});

test('a prefix that does not end in its path, or would break the TOML, is refused', (t) => {
  for (const bad of [
    { prefix: 'quay.io/a', path: 'b' },
    { prefix: 'quay.io/a"b', path: 'a"b' },
    { prefix: 'quay.io', path: '' },
  ])
    t.throws(() => mirrorDropIn([bad], '10.0.2.2:5000', true), { message: /invalid mirror prefix/ }, bad.prefix);
});
