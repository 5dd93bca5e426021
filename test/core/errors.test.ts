import test from 'ava';
import { DevpivotError, exitCodeOf, formatError, isDebug, UsageError } from '../../src/core/errors.js';

test('a DevpivotError prints its code, message and hint, without a stack trace', (t) => {
  const error = new DevpivotError('LIBVIRT_DOWN', 'cannot reach libvirt at qemu:///system', {
    hint: 'start libvirtd',
    cause: new Error('ECONNREFUSED'),
  });
  const text = formatError(error, { debug: false });
  t.is(text, 'error[LIBVIRT_DOWN]: cannot reach libvirt at qemu:///system\nhint: start libvirtd');
  t.is(exitCodeOf(error), 1);
});

test('debug output adds the stack and the cause chain', (t) => {
  const error = new DevpivotError('X', 'outer', { cause: new Error('inner reason') });
  const text = formatError(error, { debug: true });
  t.regex(text, /\n\s+at /);
  t.regex(text, /caused by:\nError: inner reason/);
});

test('usage errors exit with 2, unexpected errors with 1 and a bug hint', (t) => {
  t.is(exitCodeOf(new UsageError('bad flag')), 2);
  t.is(exitCodeOf(new TypeError('boom')), 1);
  t.regex(formatError(new TypeError('boom'), { debug: false }), /^error: boom\nhint: this is a bug in devpivot/);
});

test('DEBUG=devpivot enables debug output, other DEBUG values do not', (t) => {
  t.true(isDebug({ DEBUG: 'express,devpivot' }));
  t.false(isDebug({ DEBUG: 'express' }));
  t.false(isDebug({}));
});
