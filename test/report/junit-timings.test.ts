import test from 'ava';
import { UsageError } from '../../src/core/errors.js';
import type { RunResult } from '../../src/engine/engine.js';
import { junitDocument, renderJunit } from '../../src/report/junit.js';
import { parseJunitTimings } from '../../src/report/junit-timings.js';
import type { Scenario } from '../../src/scenario/types.js';

/** A suite as renderJunit writes it, for a scenario run without steps or nodes that took `ms`. */
function suite(file: string, name: string, ms: number): string {
  const scenario = { file, name } as Scenario;
  const result = { steps: [], nodes: [], ms, ok: true, exitCode: 0 } as unknown as RunResult;
  return renderJunit(scenario, result);
}

test('the JUnit devpivot writes reads back: a testsuite per scenario file, its name, file and time', (t) => {
  const xml = junitDocument(
    [suite('scenarios/a.yaml', 'a', 61_250), suite('scenarios/b & "c".yaml', 'b', 0)],
    'devpivot shard 1/2',
  );
  t.regex(xml, /<testsuites name="devpivot shard 1\/2"/);
  t.deepEqual(parseJunitTimings(xml, 'junit.xml'), [
    { name: 'devpivot.a', file: 'scenarios/a.yaml', seconds: 61.25 },
    { name: 'devpivot.b', file: 'scenarios/b & "c".yaml', seconds: 0 },
  ]);
});

test('another writer: single quotes, no file attribute, a self-closing suite, <testsuites> is not a suite', (t) => {
  const xml =
    "<?xml version='1.0'?>\n<testsuites time='3'>\n  <testsuite name='devpivot.x' tests='1' time='2.5'>" +
    '<testcase name=\'t\' time=\'2.5\'/></testsuite>\n  <testsuite time="1e1" name="devpivot.y"/>\n</testsuites>\n';
  t.deepEqual(parseJunitTimings(xml, 'other.xml'), [
    { name: 'devpivot.x', seconds: 2.5 },
    { name: 'devpivot.y', seconds: 10 },
  ]);
});

test('a malformed timings file is a SHARD_TIMINGS_INVALID usage error naming the file and the problem', (t) => {
  const cases: [string, RegExp][] = [
    ['hello', /not XML/],
    ['', /not XML/],
    ['<?xml version="1.0"?>\n<testsuites name="devpivot"/>\n', /no <testsuite> element: not a JUnit report/],
    [
      '<testsuites>\n<testsuite name="devpivot.a">\n</testsuite></testsuites>',
      /line 2: testsuite 'devpivot.a' has no time/,
    ],
    ['<testsuites><testsuite name="devpivot.a" time="soon"/></testsuites>', /time="soon", not a number of seconds/],
    ['<testsuites><testsuite name="devpivot.a" time="-1"/></testsuites>', /time="-1", not a number/],
    ['<testsuites><testsuite time="1"/></testsuites>', /without a name attribute/],
    ['<testsuites><testsuite name=a time="1"/></testsuites>', /cannot read the attributes/],
    ['<testsuites><testsuite name="a" name="b" time="1"/></testsuites>', /attribute name is given twice/],
    ['<testsuites><testsuite name="a &b" time="1"/></testsuites>', /bad entity/],
  ];
  for (const [xml, message] of cases) {
    const error = t.throws(() => parseJunitTimings(xml, 'prev.xml'), { instanceOf: UsageError }, xml);
    t.regex(error!.message, /^--shard-timings prev\.xml: /, xml);
    t.regex(error!.message, message, xml);
    t.is(error!.code, 'SHARD_TIMINGS_INVALID');
    t.is(error!.exitCode, 2);
  }
});
