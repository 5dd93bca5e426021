import test from 'ava';
import { runCli } from '../helpers/cli.js';

test('--help lists the commands and exits 0', async (t) => {
  const result = await runCli(['--help']);
  t.is(result.code, 0);
  t.regex(result.stdout, /Usage: devpivot <command>/);
  t.regex(result.stdout, /doctor\s+Check that this machine can run devpivot/);
});

test('--version prints the package version', async (t) => {
  const result = await runCli(['--version']);
  t.is(result.code, 0);
  t.regex(result.stdout, /^\d+\.\d+\.\d+\n$/);
});

test('<verb> --help shows the options of that verb', async (t) => {
  const result = await runCli(['doctor', '--help']);
  t.is(result.code, 0);
  t.regex(result.stdout, /Usage: devpivot doctor/);
  t.regex(result.stdout, /--json/);
  t.regex(result.stdout, /-c, --connect URI/);
});

test('an unknown verb is a usage error with a suggestion and no stack trace', async (t) => {
  const result = await runCli(['docter']);
  t.is(result.code, 2);
  t.is(result.stderr, "error[USAGE]: unknown command 'docter'\nhint: did you mean 'doctor'?\n");
});

test('an unknown flag is a usage error with a suggestion', async (t) => {
  const result = await runCli(['doctor', '--jsno']);
  t.is(result.code, 2);
  t.regex(result.stderr, /unknown option '--jsno'.*\nhint: did you mean '--json'\?/);
});

test('an unexpected positional argument is a usage error', async (t) => {
  const result = await runCli(['doctor', 'extra']);
  t.is(result.code, 2);
  t.regex(result.stderr, /unexpected argument 'extra'/);
});
