/** A node's `health-check:` (greenboot): its attempts and its script, and every wrong value an issue at file:line:col. */
import { join } from 'node:path';
import test from 'ava';
import { loadScenario, parseScenario } from '../../src/scenario/parse.js';
import { repoRoot } from '../helpers/cli.js';
import { fakeEnvironment } from './environment.js';

const env = fakeEnvironment({ '/s/checks/ok.sh': 'file', '/s/checks/ok.txt': 'file', '/s/checks': 'directory' });
const parse = (node: string) =>
  parseScenario(
    `oscontainers:\n  v2: { build: { fixture: 2, format: native } }\nnodes:\n  n: ${node}\n`,
    '/s/x.yaml',
    env,
  );
const issue = (node: string) => {
  try {
    parse(node);
  } catch (error) {
    return (error as Error).message;
  }
  return 'no issue';
};

test('health-check: true is greenboot with its default 3 attempts; a mapping sets attempts and a script', (t) => {
  t.deepEqual(parse('{ driver: rpm-ostree, pivot: v2, health-check: true }').nodes[0]!.healthCheck, { attempts: 3 });
  t.deepEqual(
    parse('{ driver: rpm-ostree, pivot: v2, health-check: { attempts: 2, script: checks/ok.sh } }').nodes[0]!
      .healthCheck,
    { attempts: 2, script: '/s/checks/ok.sh' },
  );
  t.is(parse('{ driver: rpm-ostree, pivot: v2 }').nodes[0]!.healthCheck, undefined);
});

/** The issue for `health-check: VALUE` and where it must be: line 4, the column of `at` in VALUE. */
function issueAt(value: string, at: string): { message: string; where: string } {
  const node = `{ driver: rpm-ostree, pivot: v2, health-check: ${value} }`;
  // '  n: ' is five columns: the node's text starts at column 6
  return { message: issue(node), where: `/s/x.yaml:4:${node.indexOf(at, node.indexOf('health-check')) + 6}: ` };
}

test('health-check: attempts outside 1..9, a missing or non-.sh script, an unknown key are issues at the value', (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['{ attempts: 10 }', '10', /health-check\.attempts must be a whole number from 1 to 9/],
    ['{ attempts: 0 }', '0', /health-check\.attempts must be a whole number from 1 to 9/],
    ['{ script: checks/nope.sh }', 'checks', /health-check\.script: \/s\/checks\/nope\.sh does not exist/],
    ['{ script: checks/ok.txt }', 'checks', /health-check\.script: ok\.txt does not end in \.sh/],
    ['{ script: checks }', 'checks', /health-check\.script: \/s\/checks is not a file/],
    ['{ tries: 2 }', 'tries', /tries/],
    ['false', 'false', /health-check: write 'true'/],
  ];
  for (const [value, at, pattern] of cases) {
    const { message, where } = issueAt(value, at);
    t.true(message.includes(where), `${value}: ${message} (expected at ${where})`);
    t.regex(message, pattern, value);
  }
});

test('the shipped health-rollback scenario reads: a bad node of 2 attempts and a good one with its own check', async (t) => {
  const scenario = await loadScenario(join(repoRoot, 'scenarios', 'health-rollback.yaml'));
  t.deepEqual(
    scenario.nodes.map((node) => [node.name, node.pivot, node.healthCheck?.attempts, node.healthCheck?.script ?? null]),
    [
      ['bad', 'v2-bad', 2, null],
      ['good', 'v2', 2, join(repoRoot, 'scenarios', 'health-rollback', '20_passing_check.sh')],
    ],
  );
});
