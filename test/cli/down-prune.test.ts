/**
 * `devpivot down --prune` (issue 28 item 6): the caller's stale session directories go, through the real CLI
 * against libvirt's test driver; young ones, another user's, a symlink and a session recorded for another URI stay.
 */
import { chownSync, existsSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

function session(state: string, id: string, uri: string, ageMs: number): string {
  const dir = join(state, 'sessions', id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'session.json'), JSON.stringify({ id, uri, startedAt: new Date().toISOString(), pid: 1 }));
  writeFileSync(join(dir, 'node1.console.log'), 'boot\n');
  const at = (Date.now() - ageMs) / 1000;
  for (const path of [join(dir, 'session.json'), join(dir, 'node1.console.log'), dir]) utimesSync(path, at, at);
  return dir;
}

const DAY = 86_400_000;

test('down --prune --older-than removes only the caller’s stale session directories', async (t) => {
  const state = join(tempDir('devpivot-prune-'), 'state');
  const uri = 'test:///default';
  const old = session(state, 'old-1', uri, 10 * DAY);
  const young = session(state, 'young-1', uri, 1000);
  const elsewhere = session(state, 'remote-1', 'qemu+ssh://ada@build/system', 10 * DAY);
  const outside = tempDir('devpivot-prune-outside-');
  writeFileSync(join(outside, 'keep-me'), 'x');
  symlinkSync(outside, join(state, 'sessions', 'link-1'));
  const theirs = session(state, 'theirs-1', uri, 10 * DAY);
  const uid = process.getuid?.() ?? 0;
  if (uid === 0) chownSync(theirs, 65534, 65534);

  const env = { DEVPIVOT_STATE_DIR: state, LIBVIRT_DEFAULT_URI: uri };
  const result = await runCli(['down', '--prune', '--older-than', '7d'], { env });
  t.is(result.code, 0, result.stderr);
  t.false(existsSync(old), result.stdout);
  t.regex(result.stdout, /removed session directory old-1/);
  t.true(existsSync(young));
  t.true(existsSync(elsewhere));
  t.regex(result.stdout, /left session remote-1: recorded for qemu\+ssh/);
  t.true(existsSync(join(outside, 'keep-me')), 'a symlink is never followed');
  t.true(existsSync(join(state, 'sessions', 'link-1')));
  if (uid === 0) {
    t.true(existsSync(theirs));
    t.regex(result.stdout, /left session theirs-1: owned by uid 65534/);
  }

  const bad = await runCli(['down', '--prune', '--older-than', 'soon'], { env });
  t.is(bad.code, 2);
  t.regex(bad.stderr, /invalid --older-than 'soon'/);
  const both = await runCli(['down', '--prune', '--all'], { env });
  t.is(both.code, 2);
  t.regex(both.stderr, /--prune and --all exclude each other/);
});
