/** A pivot target written as a full pullspec: an implicit `pull:` oscontainer, named as written. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { repositoryName } from '../../src/engine/engine.js';
import { checkOsImage, overrideOsImage } from '../../src/scenario/os-image.js';
import { parseScenario } from '../../src/scenario/parse.js';
import { fullPullspecProblem } from '../../src/scenario/pullspec.js';
import { repoRoot } from '../helpers/cli.js';
import { problems } from './problems.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const PINNED = `127.0.0.1:5000/os/rhcos@${DIGEST}`;

test("a node's pivot: takes a pullspec by digest or by tag, as an implicit pull", (t) => {
  const scenario = parseScenario(
    `nodes:
  a: { pivot: '${PINNED}' }
  b: { pivot: localhost:5000/os/rhcos:v2 }
  c: { pivot: 'quay.io/org/os@${DIGEST}' }
`,
    'x.yaml',
  );
  t.deepEqual(
    scenario.nodes.map((node) => node.pivot),
    [PINNED, 'localhost:5000/os/rhcos:v2', `quay.io/org/os@${DIGEST}`],
  );
  t.deepEqual(scenario.oscontainers.get(PINNED), { kind: 'pull', ref: PINNED });
  t.deepEqual(scenario.oscontainers.get('localhost:5000/os/rhcos:v2'), {
    kind: 'pull',
    ref: 'localhost:5000/os/rhcos:v2',
  });
  // The default steps name it as the target.
  t.deepEqual(
    scenario.steps.slice(0, 3).map((step) => step.label),
    ['up', `expect a booted ${PINNED} within 10m`, `assert a booted ${PINNED}`],
  );
});

test("a pivot step's to: and booted: take a pullspec too; one pullspec is one oscontainer", (t) => {
  const scenario = parseScenario(
    `nodes:
  n: { pivot: fixture:2 }
steps:
  - up
  - expect: { booted: fixture:2 }
  - pivot: { to: '${PINNED}' }
  - expect: { booted: '${PINNED}' }
`,
    'x.yaml',
  );
  t.like(scenario.steps[2], { kind: 'pivot', to: PINNED });
  t.like(scenario.steps[3], { kind: 'expect', booted: PINNED });
  t.deepEqual([...scenario.oscontainers.keys()], ['fixture:2', PINNED]);
});

test('a pullspec with bad grammar, a short digest or no registry host is an issue at the value', (t) => {
  t.deepEqual(problems(`nodes:\n  n: { pivot: 127.0.0.1:5000/OS/rhcos:v2 }\n`), [
    "2:15: node 'n' pivot target oscontainer: invalid image reference '127.0.0.1:5000/OS/rhcos:v2': 'OS/rhcos' is not a valid repository name (like quay.io/org/os@sha256:<64 hex> or host:port/repo:tag)",
  ]);
  t.deepEqual(problems(`nodes:\n  n: { pivot: 'quay.io/os@sha256:abc' }\n`), [
    "2:15: node 'n' pivot target oscontainer: 'sha256:abc' is not a sha256 digest (write @sha256: and 64 lowercase hex digits)",
  ]);
  t.deepEqual(problems(`nodes:\n  n: { pivot: org/os:v2 }\n`), [
    "2:15: node 'n' pivot target oscontainer: 'org/os:v2' is not a full pullspec: it does not start with a registry host (write HOST[:PORT]/REPOSITORY[:TAG] or HOST[:PORT]/REPOSITORY@sha256:DIGEST, e.g. 127.0.0.1:5000/os/rhcos@sha256:…)",
  ]);
  t.deepEqual(problems(`nodes:\n  n: {}\nsteps:\n  - up\n  - pivot: { to: 'quay.io/os:v 2' }\n`), [
    "5:18: pivot.to: invalid image reference 'quay.io/os:v 2': 'v 2' is not a valid tag (like quay.io/org/os@sha256:<64 hex> or host:port/repo:tag)",
  ]);
  // A name that is not defined still says so, and now names the pullspec form.
  t.deepEqual(problems(`nodes:\n  n: { pivot: nope }\n`), [
    "2:15: node 'n' pivot target oscontainer 'nope' is not defined (define it under oscontainers:, or write fixture:N or a pullspec HOST[:PORT]/REPO@sha256:…)",
  ]);
});

test("a pullspec target's repository in the embedded registry keeps the pullspec's path", (t) => {
  t.is(repositoryName(PINNED), 'devpivot/os/rhcos');
  t.is(
    repositoryName('quay.io/openshift-release-dev/ocp-v4.0-art-dev:4.6'),
    'devpivot/openshift-release-dev/ocp-v4.0-art-dev',
  );
  t.is(repositoryName('fixture:2'), 'devpivot/fixture-2', 'names are unchanged');
  t.is(fullPullspecProblem(PINNED), undefined);
  t.regex(fullPullspecProblem('quay.io/os@sha256:x')?.message ?? '', /not a sha256 digest/);
  t.regex(fullPullspecProblem('rhcos@sha256:x')?.message ?? '', /digest/);
});

test('--os-image: the default scenario with its target replaced, every step that names it too', (t) => {
  const file = join(repoRoot, 'scenarios', 'old-to-new.yaml');
  const text = overrideOsImage(readFileSync(file, 'utf8'), file, PINNED);
  const scenario = parseScenario(text, file);
  t.is(scenario.name, 'old-to-new');
  t.is(scenario.nodes[0]!.pivot, PINNED);
  t.deepEqual(scenario.oscontainers.get(PINNED), { kind: 'pull', ref: PINNED });
  t.false(scenario.oscontainers.has('fixture:2'), 'fixture:2 is no longer built');
  t.deepEqual(
    scenario.steps.map((step) => step.label),
    [
      'up',
      'expect node1 ignition within 3m',
      'expect node1 pivot.pulling within 3m',
      'expect node1 pivot.staged within 5m',
      `expect node1 booted ${PINNED} within 5m`,
      `assert node1 booted ${PINNED} reboots=1`,
    ],
  );
  t.true(text.startsWith('# The default scenario'), 'comments and layout stay');
});

test('--os-image needs one target to override and a full pullspec', (t) => {
  t.throws(() => overrideOsImage('nodes:\n  a: {}\n', 'f.yaml', PINNED), { message: /f.yaml has none/ });
  t.throws(() => overrideOsImage('nodes:\n  a: { pivot: fixture:2 }\n  b: { pivot: fixture:3 }\n', 'f.yaml', PINNED), {
    message: /has 2: fixture:2, fixture:3/,
  });
  t.is(
    overrideOsImage('nodes:\n  a: { pivot: fixture:2 }\n  b: { pivot: fixture:2 }\n', 'f.yaml', PINNED),
    `nodes:\n  a: { pivot: "${PINNED}" }\n  b: { pivot: "${PINNED}" }\n`,
  );
  t.throws(() => checkOsImage('garbage!!'), { message: /--os-image: invalid image reference/ });
  t.throws(() => checkOsImage('rhcos:v2'), { message: /not a full pullspec/ });
  t.is(checkOsImage(PINNED), PINNED);
});
