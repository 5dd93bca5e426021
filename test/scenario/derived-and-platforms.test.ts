/** `containerfile:` oscontainers and `platforms:` of a pull, read from a scenario; ChooseInstance's choice. */
import test from 'ava';
import { chooseInstance, parsePlatform, wantedPlatforms } from '../../src/oci/platform.js';
import { parseScenario } from '../../src/scenario/parse.js';
import { fakeEnvironment } from './environment.js';
import { problems } from './problems.js';

const env = fakeEnvironment({ '/s/d/Containerfile': 'file', '/s/d': 'directory', '/s/ctx': 'directory' });

test('a derived oscontainer: its Containerfile, its base defined above it, its context (default: the file dir)', (t) => {
  const scenario = parseScenario(
    `oscontainers:
  v2: { build: { fixture: 2, format: native } }
  v3: { containerfile: d/Containerfile, from: v2 }
  v4: { containerfile: d/Containerfile, from: v3, context: ctx }
nodes:
  n: { driver: bootc, pivot: v4 }
`,
    '/s/x.yaml',
    env,
  );
  t.deepEqual(scenario.oscontainers.get('v3'), {
    kind: 'build-containerfile',
    containerfile: '/s/d/Containerfile',
    context: '/s/d',
    from: 'v2',
  });
  t.like(scenario.oscontainers.get('v4'), { from: 'v3', context: '/s/ctx' });
});

test('a derived oscontainer with no such file, a base not above it, or a stray from:, is an issue at the value', (t) => {
  t.deepEqual(
    problems(
      `oscontainers:\n  v3: { containerfile: /nope/Containerfile, from: v2 }\n  v2: fixture:2\nnodes:\n  n: { pivot: v3 }\n`,
    ),
    [
      "2:24: oscontainer 'v3'.containerfile: /nope/Containerfile does not exist (a Containerfile that says ARG BASE and FROM $BASE; relative paths start at the scenario file)",
    ],
  );
  const error = t.throws(() =>
    parseScenario(
      `oscontainers:\n  v3: { containerfile: d/Containerfile, from: v2 }\nnodes:\n  n: { pivot: v3 }\n`,
      '/s/x.yaml',
      env,
    ),
  );
  t.regex(error?.message ?? '', /2:47: oscontainer 'v3'\.from 'v2' is not an oscontainer defined above it/);
  t.regex(
    problems(`oscontainers:\n  v2: { build: fixture:2, from: v1 }\nnodes:\n  n: { pivot: v2 }\n`).join('\n'),
    /'from' applies to 'containerfile' only/,
  );
});

test('platforms: of a pull, os/architecture[/variant]; anything else is an issue', (t) => {
  const scenario = parseScenario(
    `oscontainers:\n  m: { pull: 'quay.io/x/y:1', platforms: [linux/amd64, linux/arm/v7] }\nnodes:\n  n: { pivot: m }\n`,
    'x.yaml',
  );
  t.deepEqual(scenario.oscontainers.get('m'), {
    kind: 'pull',
    ref: 'quay.io/x/y:1',
    platforms: ['linux/amd64', 'linux/arm/v7'],
  });
  t.regex(
    problems(`oscontainers:\n  m: { pull: 'quay.io/x/y:1', platforms: [amd64] }\nnodes:\n  n: { pivot: m }\n`).join(
      '\n',
    ),
    /'amd64' is not a platform/,
  );
});

test("ChooseInstance: the wanted variant, then the less capable ones, then none; arm64's base variant v8", (t) => {
  const entry = (platform: string) => ({
    mediaType: 'm',
    size: 1,
    digest: platform,
    platform: parsePlatform(platform)!,
  });
  const index = [entry('linux/arm/v5'), entry('linux/arm/v6'), entry('linux/arm64/v8'), entry('linux/amd64')];
  t.is(chooseInstance(index)?.digest, 'linux/amd64');
  t.is(chooseInstance(index, { os: 'linux', architecture: 'arm', variant: 'v7' })?.digest, 'linux/arm/v6');
  t.is(chooseInstance(index, { os: 'linux', architecture: 'arm64' })?.digest, 'linux/arm64/v8');
  t.is(chooseInstance([entry('linux/amd64/v3')]), undefined, 'amd64 has no variant list: v3 is not taken');
  t.is(chooseInstance([entry('windows/amd64')]), undefined);
  t.deepEqual(
    wantedPlatforms({ os: 'linux', architecture: 'arm', variant: 'v6' }).map((p) => p.variant),
    ['v6', 'v5', ''],
  );
});
