/**
 * `npm run test:vm` orders its files by the times recorded in test/vm-timings.json (scripts/test-vm.mjs): a VM
 * file without a record weighs the mean and can start last, stretching the suite past its budget. Every VM test
 * file needs its measured time there, and every record names a VM file that exists (or the unit suite, which
 * `npm test` runs on one of the lanes).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import test from 'ava';
import { repoRoot } from './helpers/cli.js';

function vmSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return vmSources(path);
    return entry.name.endsWith('.vm.test.ts') ? [relative(repoRoot, path)] : [];
  });
}

test('test/vm-timings.json records a time (seconds) for exactly the VM test files', (t) => {
  const recorded = JSON.parse(readFileSync(join(repoRoot, 'test', 'vm-timings.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const files = vmSources(join(repoRoot, 'test')).map((source) => `dist/${source.replace(/\.ts$/, '.js')}`);
  t.true(files.length > 0);
  t.deepEqual(
    files.filter((file) => typeof recorded[file] !== 'number' || !((recorded[file] as number) > 0)),
    [],
    'VM files without a recorded time: run each once and record it',
  );
  t.deepEqual(
    Object.keys(recorded).filter((file) => !files.includes(file) && file !== 'unit: npx ava'),
    [],
    'records of files that no longer exist',
  );
});
