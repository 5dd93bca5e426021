/**
 * Oscontainer build speed: devpivot's layer writer (deterministic tar → parallel gzip in worker threads, sha256
 * of both streams) against the shell pipeline `tar -c | gzip | sha256sum` over the same exported repository, in
 * the same run. Sources: the fixture OS's v2 commit (when built: `devpivot images build`) and a synthetic
 * ~140 MB commit of host binaries (/usr/bin), made once under the OS temp dir. Median of 3 runs. The machine's
 * other load matters (2 shared cores): compare rows of one run, not runs.
 *
 * Run: npx tsc -p . && npm run bench:build   (about 1-2 minutes)
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadFixture } from '../src/images/fixture.js';
import { buildOscontainer, writeRepoLayer } from '../src/oscontainer/build.js';
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

async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function median(fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) times.push(await time(fn));
  times.sort((a, b) => a - b);
  return times[Math.floor(RUNS / 2)]!;
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
    const exportSeconds = await time(() => exportCommit(source.repo, source.commit, exported));
    const { stdout: du } = await exec('du', ['-sb', exported]);
    const treeMB = Number(du.split('\t')[0]) / 1e6;
    const out = join(work, 'layer.tar.gz');
    const shell = await median(() =>
      // Exit status 1 is GNU tar's "file changed as we read it": the exported objects are hard links into
      // the source repo, whose link count (ctime) changes when other processes export the same commit.
      exec('bash', ['-o', 'pipefail', '-c', `(tar -C '${exported}' -c . || [ $? = 1 ]) | gzip | sha256sum`], {
        maxBuffer: 1 << 20,
      }),
    );
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
    rows.push([source.name, 'tar -c | gzip | sha256sum', shell.toFixed(2), (treeMB / shell).toFixed(0), '1.00']);
    for (const [name, fn] of variants) {
      const seconds = await median(fn);
      rows.push([source.name, name, seconds.toFixed(2), (treeMB / seconds).toFixed(0), (seconds / shell).toFixed(2)]);
    }
    const { stdout: gz } = await exec('bash', [
      '-o',
      'pipefail',
      '-c',
      `(tar -C '${exported}' -c . || [ $? = 1 ]) | gzip | wc -c`,
    ]);
    const mb = (bytes: number | undefined) => `${((bytes ?? 0) / 1e6).toFixed(1)} MB`;
    console.error(
      `${source.name}: exported repo ${treeMB.toFixed(1)} MB (export ${exportSeconds.toFixed(2)} s); layer size: ` +
        `gzip(1) ${mb(Number(gz))}, adaptive ${mb(sizes.get('{}'))}, level 6 ${mb(sizes.get('{"adaptive":false}'))}`,
    );
  }
  const header = ['source', 'method', 'wall s (median of 3)', 'MB/s', 'x shell'];
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
