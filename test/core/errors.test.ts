import test from 'ava';
import { ERROR_CODES, isErrorCode } from '../../src/core/error-codes.js';
import { DevpivotError, exitCodeOf, formatError, isDebug, UsageError } from '../../src/core/errors.js';

test('a DevpivotError prints its code, message and hint, without a stack trace', (t) => {
  const error = new DevpivotError('LIBVIRT_UNREACHABLE', 'cannot reach libvirt at qemu:///system', {
    hint: 'start libvirtd',
    cause: new Error('ECONNREFUSED'),
  });
  const text = formatError(error, { debug: false });
  t.is(text, 'error[LIBVIRT_UNREACHABLE]: cannot reach libvirt at qemu:///system\nhint: start libvirtd');
  // A daemon that does not answer is a set-up error: the catalog's exit status for the code.
  t.is(exitCodeOf(error), 2);
  t.is(exitCodeOf(new DevpivotError('REGISTRY_ERROR', 'HTTP 500')), 1);
});

test('debug output adds the stack and the cause chain', (t) => {
  const error = new DevpivotError('ABORTED', 'outer', { cause: new Error('inner reason') });
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

test('without a hint of its own an error gets the default hint of its code; a hint of its own wins', (t) => {
  const fallback = new DevpivotError('FIXTURE_MISSING', 'the fixture OS is not built');
  t.is(fallback.hint, 'run: devpivot images build');
  t.is(
    formatError(fallback, { debug: false }),
    'error[FIXTURE_MISSING]: the fixture OS is not built\nhint: run: devpivot images build',
  );
  t.is(new DevpivotError('FIXTURE_MISSING', 'stale', { hint: 'rebuild' }).hint, 'rebuild');
  t.is(new DevpivotError('SCENARIO_TIMEOUT', 'timeout').hint, undefined, 'a code without a default hint');
  t.is(new UsageError('bad', undefined, 'IGNITION_HOSTNAME').hint, ERROR_CODES.IGNITION_HOSTNAME.hint);
});

test('the catalog: upper-case codes, each with a one-line title and a one-line hint if any', (t) => {
  for (const [code, info] of Object.entries(ERROR_CODES)) {
    t.regex(code, /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
    t.true(info.title.length > 0 && !info.title.includes('\n'), code);
    if (info.hint !== undefined) t.true(info.hint.length > 0 && !info.hint.includes('\n'), code);
  }
  t.true(isErrorCode('USAGE'));
  t.false(isErrorCode('toString'), 'inherited properties are not codes');
  t.false(isErrorCode('LIBVIRT_DOWN'));
});
