/**
 * Registry throughput: devpivot's registry (the real CLI, `registry serve`, as a child process) against Debian's
 * docker-registry (distribution 2.8) in the same run. A 512 MiB single-layer image (random content in a
 * store-only gzip stream, so skopeo keeps it as-is) is generated once under the OS temp dir.
 * For each registry: curl POST+PUT push, curl GET pull, skopeo dir: -> registry push, registry -> dir: pull;
 * medians of 3. Before each push the blob file is removed from the registry's storage so it is really uploaded
 * (skopeo would otherwise mount it from a repository its blob-info cache remembers).
 *
 * Run: npx tsc -p . && npm run bench:registry   (about 2-4 minutes)
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { link, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';

const MiB = 1024 * 1024;
const RAW_MIB = 512;
const RUNS = 3;
const root = fileURLToPath(new URL('../../', import.meta.url));
const work = join(tmpdir(), 'devpivot-bench-registry');

interface Target {
  name: string;
  url: string;
  host: string;
  pid: number;
  /** Where a blob's data file lives in this registry's storage. */
  blobFile(hex: string): string;
  stop(): Promise<void>;
}

function sh(file: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 16 * MiB, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${stderr || error.message}`));
      else resolve({ stdout, stderr });
    });
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 4 * MiB })) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}

/** The 512 MiB layer and a skopeo `dir:` image around it (built once, reused by later runs). */
async function prepareImage(): Promise<{ layer: string; digest: string; size: number; dir: string }> {
  await mkdir(work, { recursive: true });
  const layer = join(work, 'layer.gz');
  if (!existsSync(layer)) {
    process.stdout.write(`generating ${RAW_MIB} MiB layer in ${work} ...\n`);
    const chunk = Buffer.alloc(MiB);
    let left = RAW_MIB;
    const source = new Readable({
      read() {
        if (left-- === 0) return void this.push(null);
        this.push(Buffer.from(randomFillSync(chunk)));
      },
    });
    await pipeline(source, createGzip({ level: 0 }), createWriteStream(`${layer}.part`));
    await sh('mv', [`${layer}.part`, layer]);
  }
  const size = (await stat(layer)).size;
  const digestFile = join(work, 'layer.digest');
  let digest = existsSync(digestFile) ? (await readFile(digestFile, 'utf8')).trim() : '';
  if (!digest) {
    digest = await sha256File(layer);
    await writeFile(digestFile, digest);
  }
  const dir = join(work, 'image-dir');
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir);
  const config = Buffer.from(
    JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [digest] } }),
  );
  const configDigest = `sha256:${createHash('sha256').update(config).digest('hex')}`;
  await writeFile(join(dir, configDigest.slice(7)), config);
  await link(layer, join(dir, digest.slice(7)));
  await writeFile(join(dir, 'version'), 'Directory Transport Version: 1.1\n');
  await writeFile(
    join(dir, 'manifest.json'),
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      config: {
        mediaType: 'application/vnd.docker.container.image.v1+json',
        size: config.length,
        digest: configDigest,
      },
      layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size, digest }],
    }),
  );
  return { layer, digest, size, dir };
}

function waitForLine(child: ChildProcess, re: RegExp, what: string): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start: ${text}`)), 20_000);
    const onData = (data: Buffer) => {
      text += data;
      const match = re.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${what} exited ${code}: ${text}`)));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function startDevpivot(flags: string[] = []): Promise<Target> {
  const storage = join(work, `storage-devpivot${flags.join('')}`);
  await rm(storage, { recursive: true, force: true });
  const child = spawn(
    process.execPath,
    [join(root, 'bin/devpivot.js'), 'registry', 'serve', '--port', '0', '--quiet', '--storage', storage, ...flags],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const match = await waitForLine(child, /listening on (http:\/\/(\S+))/, 'devpivot registry');
  return {
    name: flags.length ? `devpivot ${flags.join(' ')}` : 'devpivot',
    url: match[1]!,
    host: match[2]!,
    pid: child.pid!,
    blobFile: (hex) => join(storage, 'blobs', 'sha256', hex.slice(0, 2), hex),
    async stop() {
      await stopChild(child);
      await rm(storage, { recursive: true, force: true });
    },
  };
}

async function startDistribution(): Promise<Target> {
  const storage = join(work, 'storage-distribution');
  await rm(storage, { recursive: true, force: true });
  await mkdir(storage, { recursive: true });
  const port = await freePort();
  const config = join(work, 'distribution.yml');
  await writeFile(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      '  accesslog:',
      '    disabled: true',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${storage}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: 127.0.0.1:${port}`,
      '  secret: devpivot-bench',
      '',
    ].join('\n'),
  );
  const child = spawn('/usr/bin/docker-registry', ['serve', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.resume();
  child.stderr.resume();
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/v2/`)).ok) break;
    } catch {}
    if (i > 100) throw new Error('docker-registry did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    name: 'distribution',
    url,
    host: `127.0.0.1:${port}`,
    pid: child.pid!,
    blobFile: (hex) => join(storage, 'docker', 'registry', 'v2', 'blobs', 'sha256', hex.slice(0, 2), hex, 'data'),
    async stop() {
      await stopChild(child);
      await rm(storage, { recursive: true, force: true });
    },
  };
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return (performance.now() - started) / 1000;
}

async function curlPush(target: Target, repo: string, layer: string, digest: string): Promise<void> {
  const post = await fetch(`${target.url}/v2/${repo}/blobs/uploads/`, { method: 'POST' });
  if (post.status !== 202) throw new Error(`${target.name} POST ${post.status}`);
  const location = new URL(post.headers.get('location')!, target.url);
  location.searchParams.set('digest', digest);
  const { stdout } = await sh('curl', [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '-X',
    'PUT',
    '-H',
    'Content-Type: application/octet-stream',
    '-T',
    layer,
    location.href,
  ]);
  if (stdout.trim() !== '201') throw new Error(`${target.name} PUT ${stdout}`);
}

async function curlPull(target: Target, repo: string, digest: string, size: number): Promise<void> {
  const { stdout } = await sh('curl', [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{size_download}',
    `${target.url}/v2/${repo}/blobs/${digest}`,
  ]);
  if (stdout.trim() !== `200 ${size}`) throw new Error(`${target.name} GET ${stdout}`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function peakRss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}

type Image = Awaited<ReturnType<typeof prepareImage>>;
type Op = (target: Target, image: Image, i: number) => Promise<unknown>;

const SKOPEO = ['--insecure-policy', 'copy', '--quiet'];
/** Remove the blob so a push really uploads it, and flush dirty pages so no push pays for the previous one. */
async function freshPush(target: Target, image: Image): Promise<void> {
  await rm(target.blobFile(image.digest.slice(7)), { force: true });
  await sh('sync', []);
}

/** Each operation, with what to do before each timed run. */
const OPS: Record<string, { prepare?: (target: Target, image: Image) => Promise<void>; run: Op }> = {
  'curl push': {
    prepare: freshPush,
    run: (target, image, i) => curlPush(target, `bench/curl${i}`, image.layer, image.digest),
  },
  'curl pull': { run: (target, image) => curlPull(target, 'bench/curl0', image.digest, image.size) },
  'skopeo push': {
    prepare: freshPush,
    run: (target, image, i) =>
      sh('skopeo', [
        ...SKOPEO,
        '--dest-tls-verify=false',
        `dir:${image.dir}`,
        `docker://${target.host}/bench/skopeo${i}:latest`,
      ]),
  },
  'skopeo pull': {
    prepare: (target) => rm(join(work, `pull-${target.pid}`), { recursive: true, force: true }),
    run: (target) =>
      sh('skopeo', [
        ...SKOPEO,
        '--src-tls-verify=false',
        `docker://${target.host}/bench/skopeo0:latest`,
        `dir:${join(work, `pull-${target.pid}`)}`,
      ]),
  },
};

/**
 * Run every operation RUNS times, interleaving the registries run by run, so that load from other processes on
 * the machine (this is a shared 2-core box) hits all of them alike.
 */
async function measureAll(targets: Target[], image: Image) {
  const mb = image.size / 1e6;
  const raw = new Map<string, Record<string, number[]>>(targets.map((t) => [t.name, {}]));
  for (const [op, { prepare, run }] of Object.entries(OPS)) {
    process.stdout.write(`  ${op} ...\n`);
    for (let i = 0; i < RUNS; i++) {
      for (const target of targets) {
        await prepare?.(target, image);
        const seconds = await timed(() => run(target, image, i));
        const series = raw.get(target.name)!;
        series[op] ??= [];
        series[op].push(mb / seconds);
      }
    }
  }
  for (const target of targets) await rm(join(work, `pull-${target.pid}`), { recursive: true, force: true });
  const measured: Record<string, { medians: Record<string, number>; raw: Record<string, number[]>; rss: number }> = {};
  for (const target of targets) {
    const results = raw.get(target.name)!;
    measured[target.name] = {
      medians: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, median(v)])),
      raw: results,
      rss: await peakRss(target.pid),
    };
  }
  return measured;
}

async function main(): Promise<void> {
  const image = await prepareImage();
  process.stdout.write(`blob: ${(image.size / MiB).toFixed(1)} MiB ${image.digest}\n`);
  const targets: Target[] = [];
  let measured: Awaited<ReturnType<typeof measureAll>>;
  try {
    targets.push(await startDistribution(), await startDevpivot(), await startDevpivot(['--no-fsync']));
    measured = await measureAll(targets, image);
  } finally {
    for (const target of targets) await target.stop();
  }
  const ours = measured.devpivot!;
  const fast = measured['devpivot --no-fsync']!;
  const theirs = measured.distribution!;
  const rows = Object.keys(ours.medians).map((op) => {
    const a = ours.medians[op]!;
    const f = fast.medians[op]!;
    const b = theirs.medians[op]!;
    const cells = [a.toFixed(0), b.toFixed(0), `${(a / b).toFixed(2)}x`, f.toFixed(0), `${(f / b).toFixed(2)}x`];
    return `| ${op.padEnd(11)} | ${cells.map((c) => c.padStart(8)).join(' | ')} |`;
  });
  process.stdout.write(
    [
      '',
      `MB/s, median of ${RUNS}, ${(image.size / MiB).toFixed(0)} MiB single-layer blob, 127.0.0.1`,
      '| operation   | devpivot | distrib. |    ratio | no-fsync |    ratio |',
      '|-------------|----------|----------|----------|----------|----------|',
      ...rows,
      '',
      `peak RSS (VmHWM): devpivot ${ours.rss.toFixed(1)} MB, devpivot --no-fsync ${fast.rss.toFixed(1)} MB, ` +
        `distribution ${theirs.rss.toFixed(1)} MB`,
      `load average at the end: ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`,
      `raw devpivot: ${JSON.stringify(ours.raw, (_k, v) => (typeof v === 'number' ? Math.round(v) : v))}`,
      `raw distribution: ${JSON.stringify(theirs.raw, (_k, v) => (typeof v === 'number' ? Math.round(v) : v))}`,
      '',
    ].join('\n'),
  );
}

await main();
