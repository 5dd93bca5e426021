/**
 * `npm run bench:chunked`: what a chunked image saves a node on an update (issue 24's bench row). Runs
 * scenarios/chunked-update.yaml (fixture v1 → v2 as chunked native images, `layers: 8`) and the same scenario with
 * single-layer images, one after the other on this host, and prints for the second switch (v1 → v2, a change in
 * files no package owns): the bytes the node fetched of v2 (the registry's own log: blob GETs on the node's port
 * after the pivot step started), v2's size, their ratio, and the seconds from the pivot step's start to the boot of
 * v2. Not a test: RUNS=N repeats each (median); EVENTS=dir keeps each run's NDJSON.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Event {
  kind: string;
  at: number;
  node?: string;
  name?: string;
  method?: string;
  path?: string;
  status?: number;
  bytes?: number;
  version?: string;
  ok?: boolean;
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const RUNS = Number.parseInt(process.env.RUNS ?? '1', 10);
const CHUNKED = join(root, 'scenarios', 'chunked-update.yaml');

/** The scenario with single-layer images: no `layers`, and the layer counts bootc prints for one layer. */
function singleLayerScenario(dir: string): string {
  const text = readFileSync(CHUNKED, 'utf8')
    .replace(/name: chunked-update/, 'name: single-layer-update')
    .replaceAll(', layers: 8 }', ' }')
    .replace('layers already present: 0; layers needed: 9', 'layers already present: 0; layers needed: 1')
    .replace('layers already present: 7; layers needed: 2', 'layers already present: 0; layers needed: 1')
    .replace('fetched: v1c, layers: 9', 'fetched: v1c, layers: 1')
    .replace('fetched: v2c, layers: 2', 'fetched: v2c, layers: 1');
  const file = join(dir, 'single-layer-update.yaml');
  writeFileSync(file, text);
  return file;
}

interface Measured {
  ok: boolean;
  fetchedBytes: number;
  imageBytes: number;
  pivotToBootedS: number;
}

function run(file: string, label: string): Measured {
  const result = spawnSync(process.execPath, [join(root, 'bin', 'devpivot.js'), 'run', '--json', file], {
    cwd: root,
    env: { ...process.env, CI: 'true' },
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (process.env.EVENTS) writeFileSync(join(process.env.EVENTS, `${label}-${Date.now()}.ndjson`), result.stdout);
  const events = result.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Event);
  const pivot = events.find((e) => e.kind === 'step.start' && e.name?.startsWith('pivot '));
  const booted = events.filter((e) => e.kind === 'guest.booted' && e.version === '2').at(-1);
  const blobs = (repository: string, after: number) =>
    events.filter(
      (e) =>
        e.kind === 'registry.request' &&
        e.node === 'node1' &&
        e.method === 'GET' &&
        e.status === 200 &&
        e.at >= after &&
        (e.path ?? '').includes(`/devpivot/${repository}/blobs/`),
    );
  const sum = (list: Event[]) => list.reduce((total, e) => total + (e.bytes ?? 0), 0);
  return {
    ok: events.find((e) => e.kind === 'run.end')?.ok === true,
    fetchedBytes: pivot ? sum(blobs('v2c', pivot.at)) : Number.NaN,
    // v1c's first pull fetched every layer: the whole image's size (v2c's is the same within a few bytes).
    imageBytes: sum(blobs('v1c', 0)),
    pivotToBootedS: pivot && booted ? (booted.at - pivot.at) / 1000 : Number.NaN,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

const dir = mkdtempSync(join(tmpdir(), 'devpivot-bench-chunked-'));
try {
  const single = singleLayerScenario(dir);
  const rows: [string, Measured[]][] = [
    ['single layer', []],
    ['chunked (layers: 8)', []],
  ];
  for (let i = 0; i < RUNS; i++) {
    // Alternated, so both see the same host load.
    process.stdout.write(`  single-layer run ${i + 1}/${RUNS} ...\n`);
    rows[0]![1].push(run(single, 'single-layer-update'));
    process.stdout.write(`  chunked run ${i + 1}/${RUNS} ...\n`);
    rows[1]![1].push(run(CHUNKED, 'chunked-update'));
  }
  const mb = (bytes: number) => (bytes / 1e6).toFixed(2);
  process.stdout.write(
    '\n| v1 → v2 (one node, bootc) | fetched of v2 (MB) | v2 (MB) | fetched / image | pivot step → booted v2 (s) | passed |\n|---|---|---|---|---|---|\n',
  );
  for (const [label, runs] of rows) {
    const fetched = median(runs.map((r) => r.fetchedBytes));
    const image = median(runs.map((r) => r.imageBytes));
    process.stdout.write(
      `| ${label} | ${mb(fetched)} | ${mb(image)} | ${((100 * fetched) / image).toFixed(1)} % | ` +
        `${median(runs.map((r) => r.pivotToBootedS)).toFixed(1)} | ${runs.map((r) => r.ok).join(',')} |\n`,
    );
  }
  const time = (i: number) => median(rows[i]![1].map((r) => r.pivotToBootedS));
  process.stdout.write(`\nchunked / single-layer, pivot step → booted v2: ${(time(1) / time(0)).toFixed(2)}×\n`);
  process.stdout.write('target: chunked fetches ≤ 10 % of the image\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
