/**
 * `devpivot registry serve --upstream URL [--cover PATH]`: the standalone registry as a pull-through cache, through
 * the real CLI, with real skopeo as the client and Debian's docker-registry (behind a counting proxy) as upstream.
 */
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { binPath, runCli } from '../helpers/cli.js';
import { type DockerRegistry, startDockerRegistry } from '../oscontainer/docker-registry.js';
import { type Image, makeImage, run, tempDir, writeOciLayout } from '../registry/helpers.js';
import { type CountingProxy, startCountingProxy } from '../registry/upstream.js';

let work: string;
let upstream: DockerRegistry;
let proxy: CountingProxy;

test.before(async () => {
  work = await tempDir('devpivot-registry-upstream-');
  upstream = await startDockerRegistry();
  proxy = await startCountingProxy(`http://${upstream.hostPort}`);
});

test.after.always(async () => {
  await proxy?.close();
  await upstream?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

async function pushUpstream(repository: string): Promise<Image> {
  const image = makeImage([200_000, 50_000]);
  const layout = join(work, `layout-${repository.replace(/\//g, '-')}`);
  await writeOciLayout(layout, image.manifest, [image.config, ...image.layers]);
  const pushed = await run('skopeo', [
    '--insecure-policy',
    'copy',
    '--preserve-digests',
    '--dest-tls-verify=false',
    `oci:${layout}:latest`,
    `docker://${upstream.hostPort}/${repository}:latest`,
  ]);
  if (pushed.code !== 0) throw new Error(pushed.stderr);
  return image;
}

/** Start `devpivot registry serve` and wait for its URL line. */
function serve(args: string[]): Promise<{ url: string; output: () => string; stop: () => Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, 'registry', 'serve', '--port', '0', ...args], {
      env: { ...process.env, HOME: work, REGISTRY_AUTH_FILE: join(work, 'auth.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const closed = new Promise<number | null>((done) => child.on('close', done));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const url = /registry listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
      if (url)
        resolve({
          url,
          output: () => out,
          stop: () => {
            child.kill('SIGINT');
            return closed;
          },
        });
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    closed.then((code) => reject(new Error(`registry serve exited ${code}: ${out}`)));
  });
}

test.serial(
  'serve --upstream --cover: a digest pull is fetched upstream once per blob, then served from the store',
  async (t) => {
    const image = await pushUpstream('ns/os');
    await pushUpstream('elsewhere/os');
    const registry = await serve(['--storage', join(work, 'store'), '--upstream', proxy.url, '--cover', 'ns']);
    try {
      t.regex(registry.output(), new RegExp(`pulls through from ${proxy.url.replace(/\./g, '\\.')} for ns`));
      const host = new URL(registry.url).host;
      for (const i of [1, 2]) {
        const copied = await run('skopeo', [
          '--insecure-policy',
          'copy',
          '--src-tls-verify=false',
          `docker://${host}/ns/os@${image.manifest.digest}`,
          `dir:${join(work, `copy-${i}`)}`,
        ]);
        t.is(copied.code, 0, copied.stderr);
      }
      for (const blob of [image.config, ...image.layers])
        t.is(proxy.count('GET', `/v2/ns/os/blobs/${blob.digest}`), 1, proxy.requests.join('\n'));
      t.is(proxy.count('GET', `/v2/ns/os/manifests/${image.manifest.digest}`), 1);
      t.regex(registry.output(), /upstream blob ns\/os@sha256:[0-9a-f]{64} stored \d+B/);
      // Outside --cover: an unknown manifest, and the upstream is not asked.
      const before = proxy.requests.length;
      const other = await run('skopeo', [
        '--insecure-policy',
        'inspect',
        '--no-tags',
        '--tls-verify=false',
        `docker://${host}/elsewhere/os@${image.manifest.digest}`,
      ]);
      t.not(other.code, 0);
      t.is(proxy.requests.length, before, proxy.requests.slice(before).join('\n'));
    } finally {
      t.is(await registry.stop(), 0);
    }
  },
);

test('serve: --cover without --upstream, --upstream without --cover, a bad upstream or size: usage errors before anything starts', async (t) => {
  const cases: [string[], RegExp][] = [
    [['--cover', 'ns'], /--cover needs --upstream/],
    [['--upstream', 'http://127.0.0.1:5999/v2'], /invalid --upstream .*no path/],
    [['--upstream', 'ftp://127.0.0.1'], /invalid --upstream/],
    [['--upstream', 'not a url'], /invalid --upstream 'not a url'/],
    // Pulling through for every repository is never implied: the repositories are named (issue 28 item 4).
    [['--upstream', 'http://127.0.0.1:5999'], /--upstream needs --cover/],
    [['--max-blob-size', '0'], /invalid --max-blob-size '0'/],
    [['--max-blob-size', '8X'], /invalid --max-blob-size '8X'/],
  ];
  for (const [args, expected] of cases) {
    const result = await runCli(['registry', 'serve', '--port', '0', '--storage', join(work, 'never'), ...args], {
      timeoutMs: 15_000,
    });
    t.is(result.code, 2, args.join(' '));
    t.regex(result.stderr, expected);
  }
});
