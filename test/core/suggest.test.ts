import test from 'ava';
import { closest, editDistance } from '../../src/core/suggest.js';

test('edit distance', (t) => {
  t.is(editDistance('kitten', 'sitting'), 3);
  t.is(editDistance('', 'abc'), 3);
  t.is(editDistance('same', 'same'), 0);
});

test('closest picks typos and prefixes, rejects unrelated words', (t) => {
  t.is(closest('doctr', ['doctor', 'down', 'up']), 'doctor');
  t.is(closest('reg', ['registry', 'run']), 'registry');
  t.is(closest('xyzzy', ['doctor', 'down']), undefined);
});
