import test from 'ava';
import { assignShards, parseShard, recordedSeconds, shardFiles, shardKey } from '../../src/cli/shard.js';
import { UsageError } from '../../src/core/errors.js';

const cwd = '/repo';
const files = Array.from({ length: 15 }, (_, i) => `scenarios/s${String(i).padStart(2, '0')}.yaml`);

/** A fixed shuffle (a linear congruential generator), so that a failure can be reproduced. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

test('parseShard: INDEX/COUNT with 1 ≤ INDEX ≤ COUNT', (t) => {
  t.deepEqual(parseShard('1/2'), { index: 1, count: 2 });
  t.deepEqual(parseShard('2/2'), { index: 2, count: 2 });
  t.deepEqual(parseShard('1/1'), { index: 1, count: 1 });
  const cases: [string, RegExp][] = [
    ['0/2', /shards are numbered from 1/],
    ['3/2', /shard 3 is past the count 2/],
    ['a/b', /'a\/b' is not INDEX\/COUNT/],
    ['1/0', /the shard count must be at least 1/],
    ['1', /not INDEX\/COUNT/],
    ['-1/2', /not INDEX\/COUNT/],
    ['1.5/2', /not INDEX\/COUNT/],
    ['', /not INDEX\/COUNT/],
  ];
  for (const [text, message] of cases) {
    const error = t.throws(() => parseShard(text), { instanceOf: UsageError }, text);
    t.regex(error!.message, message, text);
    t.is(error!.code, 'SHARD_INVALID', text);
    t.is(error!.exitCode, 2, text);
    t.truthy(error!.hint, text);
  }
});

test('the shards of a list, for every count from 1 to 20, hold every file exactly once', (t) => {
  for (let count = 1; count <= 20; count++) {
    const shards = assignShards(files, count, { cwd });
    t.is(shards.length, count);
    const all = shards.flat();
    t.is(all.length, files.length, `count ${count}`);
    t.deepEqual([...all].sort(), [...files].sort(), `count ${count}`);
  }
});

test('without timings, shard sizes differ by at most one file (round-robin over the sorted list)', (t) => {
  for (let count = 1; count <= 20; count++) {
    const sizes = assignShards(files, count, { cwd }).map((shard) => shard.length);
    t.true(Math.max(...sizes) - Math.min(...sizes) <= 1, `count ${count}: ${sizes.join(',')}`);
  }
  t.deepEqual(assignShards(['c.yaml', 'a.yaml', 'd.yaml', 'b.yaml', 'e.yaml'], 2, { cwd }), [
    ['a.yaml', 'c.yaml', 'e.yaml'],
    ['b.yaml', 'd.yaml'],
  ]);
});

test('deterministic and independent of the order of the files, and of a file given twice', (t) => {
  for (const count of [1, 2, 3, 4, 7, 15, 16]) {
    const expected = assignShards(files, count, { cwd });
    t.deepEqual(assignShards(files, count, { cwd }), expected);
    for (const seed of [1, 2, 3, 42])
      t.deepEqual(assignShards(shuffled(files, seed), count, { cwd }), expected, `count ${count} seed ${seed}`);
    t.deepEqual(assignShards([...files, ...files.slice(0, 5)], count, { cwd }), expected, `duplicates, ${count}`);
  }
  const seconds = new Map(files.map((file, i) => [shardKey(file, cwd), (i * 37) % 11]));
  const timed = assignShards(files, 4, { cwd, seconds });
  t.deepEqual(assignShards(shuffled(files, 7), 4, { cwd, seconds }), timed);
});

test('one file spelt three ways is one file, kept as first given', (t) => {
  const shards = assignShards(['./scenarios/a.yaml', '/repo/scenarios/a.yaml', 'scenarios/a.yaml', 'b.yaml'], 2, {
    cwd,
  });
  t.deepEqual(shards, [['b.yaml'], ['./scenarios/a.yaml']]);
});

test('more shards than files: the extra shards are empty', (t) => {
  t.deepEqual(assignShards(['a.yaml', 'b.yaml'], 4, { cwd }), [['a.yaml'], ['b.yaml'], [], []]);
  t.deepEqual(shardFiles(['a.yaml', 'b.yaml'], { index: 3, count: 3 }, { cwd }), []);
});

test('with timings: longest processing time first, each file to the least loaded shard', (t) => {
  const seconds = new Map([
    ['a.yaml', 10],
    ['b.yaml', 9],
    ['c.yaml', 6],
    ['d.yaml', 5],
    ['e.yaml', 4],
    ['f.yaml', 2],
  ]);
  const names = [...seconds.keys()].reverse();
  // 10 → 1; 9 → 2; 6 → 2 (15); 5 → 1 (15); 4 → 1 (19, the tie goes to the lower index); 2 → 2 (17).
  const shards = assignShards(names, 2, { cwd, seconds });
  t.deepEqual(shards, [
    ['a.yaml', 'd.yaml', 'e.yaml'],
    ['b.yaml', 'c.yaml', 'f.yaml'],
  ]);
  const loads = shards.map((shard) => shard.reduce((sum, file) => sum + seconds.get(file)!, 0));
  t.deepEqual(loads, [19, 17]);
  // Round-robin by name would have put a, c, e (20) against b, d, f (16).
  t.notDeepEqual(shards, assignShards(names, 2, { cwd }));
});

test('with timings, one long file gets a shard of its own', (t) => {
  const seconds = new Map([
    ['long.yaml', 600],
    ['a.yaml', 60],
    ['b.yaml', 60],
    ['c.yaml', 60],
  ]);
  t.deepEqual(assignShards(['a.yaml', 'b.yaml', 'c.yaml', 'long.yaml'], 2, { cwd, seconds }), [
    ['long.yaml'],
    ['a.yaml', 'b.yaml', 'c.yaml'],
  ]);
});

test('a file without a recorded time weighs the mean of the known times; equal weights tie by name', (t) => {
  // Known: 30 and 10, mean 20: a 30 → 1; new 20 → 2; z 20 → 2 (40); c 10 → 1 (40). Had the unknown files
  // weighed 1, c would have gone to shard 2 before them: [a], [c, new, z].
  const seconds = new Map([
    ['a.yaml', 30],
    ['c.yaml', 10],
  ]);
  t.deepEqual(assignShards(['a.yaml', 'c.yaml', 'new.yaml', 'z.yaml'], 2, { cwd, seconds }), [
    ['a.yaml', 'c.yaml'],
    ['new.yaml', 'z.yaml'],
  ]);
  const zeros = new Map(files.map((file) => [shardKey(file, cwd), 0]));
  const sizes = assignShards(files, 4, { cwd, seconds: zeros }).map((shard) => shard.length);
  t.deepEqual(sizes, [4, 4, 4, 3], 'all times zero: balanced by count');
});

test('recordedSeconds: by the file attribute, else by the default suite name; the longest of repeats', (t) => {
  const given = ['scenarios/a.yaml', './scenarios/b.yaml', 'other/c.yaml', 'x/same.yaml', 'y/same.yaml'];
  const seconds = recordedSeconds(
    given,
    [
      { name: 'devpivot.renamed', file: 'scenarios/a.yaml', seconds: 12 },
      { name: 'devpivot.b', seconds: 5 },
      { name: 'devpivot.b', seconds: 7 },
      { name: 'devpivot.c', file: 'elsewhere/c.yaml', seconds: 99 },
      { name: 'devpivot.same', seconds: 3 },
      { name: 'devpivot.gone', file: 'scenarios/gone.yaml', seconds: 50 },
    ],
    cwd,
  );
  t.deepEqual(
    [...seconds].sort(),
    [
      ['scenarios/a.yaml', 12],
      ['scenarios/b.yaml', 7],
    ],
    'c is another file of that name; same.yaml is ambiguous; gone.yaml is not given',
  );
});
