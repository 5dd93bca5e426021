/**
 * Temporary directories that tests remove again: `tempDir(prefix, t)` is removed when that test ends
 * (`t.teardown`), `tempDir(prefix)` after the test file's last test (a `test.after.always` hook, declared when this
 * module loads, so import it from test files only). Both remove with `rm -rf` semantics (`force`: never throws for
 * a directory the test removed itself).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';

const made: string[] = [];

test.after.always(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const remove = (dir: string) => rmSync(dir, { recursive: true, force: true });

export function tempDir(prefix: string, t?: { teardown: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (t) t.teardown(() => remove(dir));
  else made.push(dir);
  return dir;
}
