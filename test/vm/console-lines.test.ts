import test from 'ava';
import { cleanLine, LineSplitter } from '../../src/vm/console-lines.js';

test('splits on LF and CRLF across chunk boundaries', (t) => {
  const splitter = new LineSplitter();
  t.deepEqual(splitter.push(Buffer.from('first li')), []);
  t.deepEqual(splitter.push(Buffer.from('ne\r\nsecond\nthi')), ['first line', 'second']);
  t.deepEqual(splitter.push(Buffer.from('rd\n')), ['third']);
  t.deepEqual(splitter.flush(), []);
});

test('multi-byte UTF-8 split between chunks stays intact', (t) => {
  const splitter = new LineSplitter();
  const bytes = Buffer.from('naïve ✓\n');
  const cut = bytes.indexOf(0xe2) + 1; // inside the 3-byte check mark
  t.deepEqual(splitter.push(bytes.subarray(0, cut)), []);
  t.deepEqual(splitter.push(bytes.subarray(cut)), ['naïve ✓']);
});

test('ANSI colour, cursor and OSC sequences are removed', (t) => {
  t.is(
    cleanLine('\x1b[0;32m  OK  \x1b[0m] Reached target \x1b[1mBasic System\x1b[0m.'),
    '  OK  ] Reached target Basic System.',
  );
  t.is(cleanLine('\x1b[2J\x1b[H\x1b[?25lGRUB'), 'GRUB');
  t.is(cleanLine('\x1b]0;title\x07prompt'), 'prompt');
  t.is(cleanLine('\x1b(Bplain\x1bc'), 'plain');
});

test('bare CR keeps the last redraw; control characters are dropped', (t) => {
  t.is(cleanLine('progress 10%\rprogress 50%\rprogress 100%'), 'progress 100%');
  t.is(cleanLine('line\r'), 'line');
  t.is(cleanLine('a\x00b\x07c\td'), 'abc\td');
});

test('flush returns the unterminated tail, cleaned', (t) => {
  const splitter = new LineSplitter();
  t.deepEqual(splitter.push('login: \x1b[0m'), []);
  t.deepEqual(splitter.flush(), ['login:']);
  t.deepEqual(splitter.flush(), []);
});

test('a guest that never prints a newline cannot grow the buffer without bound', (t) => {
  const splitter = new LineSplitter(100);
  const lines = splitter.push('x'.repeat(350));
  t.is(lines.length, 3);
  t.true(lines.every((line) => line.length === 100));
  t.deepEqual(splitter.flush(), ['x'.repeat(50)]);
});

test('a kernel message printed inside a line is taken out of it; the line is whole again', (t) => {
  const splitter = new LineSplitter();
  const json = '{"steps":2,"task":"staging","type":"ProgressSteps"}';
  // after the program's text, before its newline (seen on a loaded host)
  t.deepEqual(splitter.push(`devpivot-progress: ${json}[  222.705455] hrtimer: interrupt took 20853056 ns\n\n`), [
    '[  222.705455] hrtimer: interrupt took 20853056 ns',
    `devpivot-progress: ${json}`,
  ]);
  // between two chunks of the program's line
  t.deepEqual(splitter.push(`devpivot-progress: ${json.slice(0, 20)}[  223.000001] clocksource: x\n`), [
    '[  223.000001] clocksource: x',
  ]);
  t.deepEqual(splitter.push(`${json.slice(20)}\n`), [`devpivot-progress: ${json}`]);
  // lines that start with a kernel timestamp, or have none, are as they were
  t.deepEqual(splitter.push('[    0.000000] Linux version 6.1.0\n[  OK  ] Finished x.service.\nno time [here] 1.5\n'), [
    '[    0.000000] Linux version 6.1.0',
    '[  OK  ] Finished x.service.',
    'no time [here] 1.5',
  ]);
  // an interrupted line the stream ends in is flushed whole
  t.deepEqual(splitter.push('fixture login: [  230.100000] hrtimer: y\n'), ['[  230.100000] hrtimer: y']);
  t.deepEqual(splitter.flush(), ['fixture login:']);
});
