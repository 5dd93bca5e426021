/**
 * Oscontainer build speed: devpivot's layer writers (deterministic tar → parallel gzip in worker threads, sha256
 * of both streams) against the shell pipeline `tar -c | gzip | sha256sum` in the same run: the legacy layer
 * against the same exported repository, the native (ostree-ext) layer against a checkout of the same commit
 * (the tree it carries; its objects are read from the archive repo and decompressed on the fly). Sources: the
 * fixture OS's v2 commit (when built: `devpivot images build`) and a synthetic commit of host binaries
 * (/usr/bin), made once under the OS temp dir.
 *
 * Three rounds; each round runs the shell pipeline, then every devpivot variant. "x shell" is the median of the
 * per-round ratios, so load that drifts between rounds (2 cores shared with VMs) cancels out; CPU seconds
 * (user + system, worker threads and the shell's children included) show the work itself.
 *
 * Run: npx tsc -p . && npm run bench:build   (a few minutes)
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadFixture } from '../src/fixture/fixture.js';
import { buildOscontainer, writeRepoLayer } from '../src/oscontainer/build.js';
import { writeLayerFile } from '../src/oscontainer/layer-file.js';
import { ArchiveRepo } from '../src/oscontainer/native/archive-repo.js';
import { planLayer } from '../src/oscontainer/native/layer-plan.js';
import { streamLayer } from '../src/oscontainer/native/layer-tar.js';
import { exportCommit } from '../src/oscontainer/ostree.js';
import type { GzipOptions } from '../src/oscontainer/parallel-gzip.js';
import { pushOscontainer } from '../src/oscontainer/push.js';
import { startRegistry } from '../src/registry/server.js';

const exec = promisify(execFile);
const RUNS = 3;
const work = join(tmpdir(), 'devpivot-bench-build');

interface Source {
  name: string;
  repo: string;
  commit: string;
}

async function syntheticSource(): Promise<Source> {
  const repo = join(work, 'synthetic-repo');
  if (!existsSync(join(repo, 'refs', 'heads', 'bench'))) {
    await rm(repo, { recursive: true, force: true });
    await exec('ostree', ['init', '--mode=archive', `--repo=${repo}`]);
    await exec(
      'ostree',
      [
        'commit',
        `--repo=${repo}`,
        '--branch=bench',
        '--tree=dir=/usr/bin',
        '--add-metadata-string=version=bench',
        '--owner-uid=0',
        '--owner-gid=0',
      ],
      { maxBuffer: 1 << 24 },
    );
  }
  const { stdout } = await exec('ostree', ['rev-parse', `--repo=${repo}`, 'bench']);
  return { name: 'synthetic (/usr/bin)', repo, commit: stdout.trim() };
}

interface Timing {
  wall: number;
  cpu: number;
}

/** Wall and CPU time of an in-process function (CPU of all threads; children it spawns are not counted). */
async function timed(fn: () => Promise<unknown>): Promise<Timing> {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  await fn();
  const used = process.cpuUsage(cpu);
  return { wall: Number(process.hrtime.bigint() - start) / 1e9, cpu: (used.user + used.system) / 1e6 };
}

/** `tar -c | gzip | sha256sum` of a directory, timed by bash (its children's CPU included). */
async function shellPipeline(dir: string): Promise<Timing> {
  // Exit status 1 is GNU tar's "file changed as we read it": the exported objects are hard links into
  // the source repo, whose link count (ctime) changes when other processes export the same commit.
  const pipeline = `(tar -C '${dir}' -c . || [ $? = 1 ]) | gzip | sha256sum >/dev/null`;
  const start = process.hrtime.bigint();
  const { stdout } = await exec('bash', ['-o', 'pipefail', '-c', `TIMEFORMAT='%3U %3S'; { time ${pipeline}; } 2>&1`]);
  const wall = Number(process.hrtime.bigint() - start) / 1e9;
  const [user, system] = stdout.trim().split(/\s+/).slice(-2).map(Number);
  return { wall, cpu: user! + system! };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** RUNS rounds of the baseline then each variant; one table row each. */
async function rounds(
  source: string,
  baseline: [string, () => Promise<Timing>],
  variants: Array<[string, () => Promise<unknown>]>,
  megabytes: number,
): Promise<string[][]> {
  const base: Timing[] = [];
  const results = variants.map(() => ({ timings: [] as Timing[], ratios: [] as number[] }));
  for (let round = 0; round < RUNS; round++) {
    const b = await baseline[1]();
    base.push(b);
    for (const [i, [, fn]] of variants.entries()) {
      const t = await timed(fn);
      results[i]!.timings.push(t);
      results[i]!.ratios.push(t.wall / b.wall);
    }
  }
  const row = (name: string, timings: Timing[], ratio: string) => {
    const wall = median(timings.map((t) => t.wall));
    const cpu = median(timings.map((t) => t.cpu));
    return [source, name, wall.toFixed(2), cpu.toFixed(2), (megabytes / wall).toFixed(0), ratio];
  };
  return [
    row(baseline[0], base, '1.00'),
    ...variants.map(([name], i) => row(name, results[i]!.timings, median(results[i]!.ratios).toFixed(2))),
  ];
}

async function main() {
  await mkdir(work, { recursive: true });
  const sources: Source[] = [];
  try {
    const fixture = await loadFixture();
    const v2 = fixture.versions.find((v) => v.version === '2') ?? fixture.versions[1];
    if (v2) sources.push({ name: `fixture v${v2.version}`, repo: fixture.repo, commit: v2.commit });
  } catch (error) {
    console.error(`fixture not available (${(error as Error).message}); using the synthetic source only`);
  }
  sources.push(await syntheticSource());

  const rows: string[][] = [];
  for (const source of sources) {
    const exported = join(work, 'exported');
    await rm(exported, { recursive: true, force: true });
    const exportSeconds = (await timed(() => exportCommit(source.repo, source.commit, exported))).wall;
    const { stdout: du } = await exec('du', ['-sb', exported]);
    const treeMB = Number(du.split('\t')[0]) / 1e6;
    const out = join(work, 'layer.tar.gz');
    const cores = availableParallelism();
    const sizes = new Map<string, number>();
    const layer = async (gzip: GzipOptions = {}) => {
      const info = await writeRepoLayer(exported, out, { gzip });
      sizes.set(JSON.stringify(gzip), info.size);
    };
    const variants: Array<[string, () => Promise<unknown>]> = [
      [`devpivot layer (default: adaptive, ${cores} workers, level 6)`, () => layer()],
      [`devpivot layer, no adaptive, ${cores} workers, level 6`, () => layer({ adaptive: false })],
      ['devpivot layer, no adaptive, 1 worker, level 6', () => layer({ adaptive: false, workers: 1 })],
      [`devpivot layer, no adaptive, ${cores} workers, level 1`, () => layer({ adaptive: false, level: 1 })],
      [
        'devpivot full build (export + layer + config)',
        async () => (await buildOscontainer({ repo: source.repo, commit: source.commit, workDir: work })).dispose(),
      ],
      [
        'devpivot full build + push to the embedded registry (HTTP)',
        async () => {
          const image = await buildOscontainer({ repo: source.repo, commit: source.commit, workDir: work });
          // A fresh repository and store each run, so every blob is really uploaded.
          await rm(join(work, 'registry'), { recursive: true, force: true });
          const registry = await startRegistry({ storage: join(work, 'registry'), port: 0 });
          try {
            await pushOscontainer(image, `${registry.address}/bench/os:latest`);
          } finally {
            await registry.stop();
            await image.dispose();
          }
        },
      ],
    ];
    rows.push(
      ...(await rounds(source.name, ['tar -c | gzip | sha256sum', () => shellPipeline(exported)], variants, treeMB)),
    );

    // Native: the baseline is the tree itself, checked out once (the builder never checks out).
    const checkout = join(work, 'checkout');
    await rm(checkout, { recursive: true, force: true });
    await exec('ostree', ['checkout', `--repo=${source.repo}`, source.commit, checkout]);
    const { stdout: duTree } = await exec('du', ['-sb', checkout]);
    const nativeMB = Number(duTree.split('\t')[0]) / 1e6;
    const nativeLayer = async (gzip: GzipOptions = {}, reuseDeflate = true) => {
      const repo = new ArchiveRepo(source.repo);
      const plan = await planLayer(repo, source.commit);
      const info = await writeLayerFile(streamLayer(repo, plan, { reuseDeflate }), out, { gzip, total: plan.size });
      sizes.set(`native ${reuseDeflate} ${JSON.stringify(gzip)}`, info.size);
    };
    const nativeVariants: Array<[string, () => Promise<unknown>]> = [
      [`devpivot native layer (default: joins the repo's deflate streams, ${cores} workers)`, () => nativeLayer()],
      [`devpivot native layer, compressing everything again, ${cores} workers, level 6`, () => nativeLayer({}, false)],
      [
        'devpivot native layer, compressing everything again, 1 worker, level 6',
        () => nativeLayer({ workers: 1 }, false),
      ],
      [
        'devpivot native full build (read + layer + config)',
        async () =>
          (
            await buildOscontainer({ repo: source.repo, commit: source.commit, format: 'native', workDir: work })
          ).dispose(),
      ],
      [
        'devpivot native full build + push to the embedded registry (HTTP)',
        async () => {
          const image = await buildOscontainer({
            repo: source.repo,
            commit: source.commit,
            format: 'native',
            workDir: work,
          });
          await rm(join(work, 'registry'), { recursive: true, force: true });
          const registry = await startRegistry({ storage: join(work, 'registry'), port: 0 });
          try {
            await pushOscontainer(image, `${registry.address}/bench/native:latest`);
          } finally {
            await registry.stop();
            await image.dispose();
          }
        },
      ],
    ];
    const nativeBaseline: [string, () => Promise<Timing>] = [
      'tar -c | gzip | sha256sum (checkout of the commit)',
      () => shellPipeline(checkout),
    ];
    rows.push(...(await rounds(source.name, nativeBaseline, nativeVariants, nativeMB)));
    const { stdout: gzTree } = await exec('bash', ['-o', 'pipefail', '-c', `tar -C '${checkout}' -c . | gzip | wc -c`]);
    await rm(checkout, { recursive: true, force: true });

    const { stdout: gz } = await exec('bash', [
      '-o',
      'pipefail',
      '-c',
      `(tar -C '${exported}' -c . || [ $? = 1 ]) | gzip | wc -c`,
    ]);
    const mb = (bytes: number | undefined) => `${((bytes ?? 0) / 1e6).toFixed(1)} MB`;
    console.error(
      `${source.name}: exported repo ${treeMB.toFixed(1)} MB (export ${exportSeconds.toFixed(2)} s); layer size: ` +
        `gzip(1) ${mb(Number(gz))}, adaptive ${mb(sizes.get('{}'))}, level 6 ${mb(sizes.get('{"adaptive":false}'))}; ` +
        `tree ${nativeMB.toFixed(1)} MB, gzip(1) of the tree ${mb(Number(gzTree))}, native layer ` +
        `${mb(sizes.get('native true {}'))} (compressed again: ${mb(sizes.get('native false {}'))})`,
    );
  }
  const header = ['source', 'method', `wall s (median of ${RUNS})`, 'CPU s', 'MB/s', 'x shell (median ratio)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  await rm(join(work, 'exported'), { recursive: true, force: true });
  await rm(join(work, 'layer.tar.gz'), { force: true });
  await rm(join(work, 'registry'), { recursive: true, force: true });
}

await main();
