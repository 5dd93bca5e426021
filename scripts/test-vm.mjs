// `npm run test:vm`: the VM test files on two lanes (2 cores), heaviest recorded file first, each file in its own
// ava process so that its wall time is known. At the end: the failures, the ten slowest files, the wall time
// against the sum of the files' times, and last of all each failed file's report (its ava output from the first
// failed test), so that the tail of a CI log says why. The times are recorded in test/vm-timings.json (seconds per file, the
// latest passing run) and order the next run; a file without a record weighs the mean of the known ones and is
// named. The files are those with a source (test/**/*.vm.test.ts): a compiled file whose source is gone is a stale
// build, not a test. Arguments: files to run instead of all; LANES=N changes the lane count; --with-unit runs the
// unit suite (`npx ava`) first on one lane while the other lane starts the VM files: the unit suite keeps about
// one of the two cores busy, so the other is the VM files' (`npm test` does this).
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const TIMINGS = 'test/vm-timings.json';
/** The unit suite's job, recorded under this key next to the VM files. */
const UNIT = 'unit: npx ava';
const LANES = Number.parseInt(process.env.LANES ?? '2', 10);

function vmFiles(dir, suffix) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return vmFiles(path, suffix);
    return entry.name.endsWith(suffix) ? [relative('.', path)] : [];
  });
}

/** The compiled file of each VM test source; a source not compiled yet is a broken build. */
function compiledVmFiles() {
  const sources = vmFiles('test', '.vm.test.ts').sort();
  const compiled = sources.map((source) => `dist/${source.replace(/\.ts$/, '.js')}`);
  const missing = compiled.filter((file) => !existsSync(file));
  if (missing.length > 0) {
    process.stderr.write(`test:vm: not compiled: ${missing.join(', ')}: run \`npm run build\` first\n`);
    process.exit(1);
  }
  const stale = existsSync('dist/test') ? vmFiles('dist/test', '.vm.test.js').filter((f) => !compiled.includes(f)) : [];
  if (stale.length > 0) process.stdout.write(`test:vm: not run, their source is gone: ${stale.join(', ')}\n`);
  return compiled;
}

const recorded = existsSync(TIMINGS) ? JSON.parse(readFileSync(TIMINGS, 'utf8')) : {};
const args = process.argv.slice(2);
const withUnit = args.includes('--with-unit');
const named = args.filter((arg) => arg !== '--with-unit');
const files = named.length > 0 ? named : compiledVmFiles();
// No file to run is a broken build, not a pass.
if (files.length === 0) {
  process.stderr.write('test:vm: no *.vm.test.ts under test/: nothing to run\n');
  process.exit(1);
}
const known = files.map((file) => recorded[file]).filter((value) => typeof value === 'number');
const mean = known.length > 0 ? known.reduce((a, b) => a + b, 0) / known.length : 1;
const weight = (file) => recorded[file] ?? mean;
const unweighed = files.filter((file) => typeof recorded[file] !== 'number');
if (unweighed.length > 0)
  process.stdout.write(`test:vm: no recorded time (weighs the mean, ${Math.round(mean)} s): ${unweighed.join(', ')}\n`);
// Longest first onto whichever lane frees up: list scheduling, which adapts to the machine's noise.
const queue = [...files].sort((a, b) => weight(b) - weight(a) || (a < b ? -1 : 1));
// The unit suite first: its failures show early, and it leaves a core to the VM file beside it.
if (withUnit) queue.unshift(UNIT);

const results = [];

function runFile(file) {
  return new Promise((resolve) => {
    const started = Date.now();
    const name = file === UNIT ? 'unit' : file.replace(/^dist\/test\//, '').replace(/\.vm\.test\.js$/, '');
    const command = file === UNIT ? ['ava'] : ['ava', '--config', 'ava.vm.config.js', file];
    const child = spawn('npx', command, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    const lines = [];
    const prefix = (chunk) => {
      for (const line of chunk.toString().split('\n'))
        if (line.trim()) {
          lines.push(line);
          process.stdout.write(`[${name}] ${line}\n`);
        }
    };
    child.stdout.on('data', prefix);
    child.stderr.on('data', prefix);
    child.on('close', (code) => {
      const seconds = (Date.now() - started) / 1000;
      results.push({ file, seconds, ok: code === 0, lines: code === 0 ? [] : lines });
      process.stdout.write(`[${name}] ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${format(seconds)}\n`);
      resolve();
    });
  });
}

function format(seconds) {
  const whole = Math.round(seconds); // rounded once: 479.6 s is 8m00s, not 7m60s
  return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
}

async function lane() {
  while (queue.length > 0) await runFile(queue.shift());
}

const t0 = Date.now();
await Promise.all(Array.from({ length: LANES }, lane));
// Read again before writing: another test:vm run may have recorded its files since this one started.
const latest = existsSync(TIMINGS) ? JSON.parse(readFileSync(TIMINGS, 'utf8')) : {};
for (const { file, seconds, ok } of results) if (ok) latest[file] = Math.round(seconds);
// Records of files whose source is gone are dropped (test/vm-timings.test.ts requires exactly the VM files).
const kept = Object.entries(latest).filter(
  ([file]) => file === UNIT || existsSync(file.replace(/^dist\//, '').replace(/\.js$/, '.ts')),
);
writeFileSync(TIMINGS, `${JSON.stringify(Object.fromEntries(kept.sort()), null, 2)}\n`);

const failed = results.filter((r) => !r.ok);
const wall = (Date.now() - t0) / 1000;
const sum = results.reduce((total, r) => total + r.seconds, 0);
process.stdout.write(
  `\n${withUnit ? 'unit + VM' : 'VM'} suite: ${results.length - failed.length}/${results.length} files passed in ${format(wall)} wall ` +
    `(files' times add up to ${format(sum)} on ${LANES} lanes)\n`,
);
for (const { file } of failed) process.stdout.write(`  FAILED ${file}\n`);
process.stdout.write('slowest ten files:\n');
for (const { file, seconds, ok } of [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 10))
  process.stdout.write(`  ${format(seconds).padStart(6)}  ${file}${ok ? '' : ' (failed)'}\n`);
// A failed file's report, from its first failed test (ava's ✘ line; the whole tail when there is none: a crash).
const REPORT_LINES = 60;
for (const { file, lines } of failed) {
  const first = lines.findIndex((line) => line.includes('✘'));
  const report = first >= 0 ? lines.slice(first, first + REPORT_LINES) : lines.slice(-REPORT_LINES);
  process.stdout.write(`\nwhy ${file} failed (${report.length} of its ${lines.length} lines):\n`);
  for (const line of report) process.stdout.write(`  ${line}\n`);
}
process.exitCode = failed.length > 0 ? 1 : 0;
