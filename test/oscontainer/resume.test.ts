/**
 * The registry client against a registry that misbehaves: 5xx answers are retried (manifests and blobs), and a
 * blob download that fails leaves its bytes as a partial that the next run resumes with Range.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { join } from 'node:path';
import test from 'ava';
import { copyImage } from '../../src/oscontainer/copy.js';
import { makeImage, pushImage, startTestRegistry, tempDir } from '../registry/helpers.js';
import { startCuttingProxy } from './cutting-proxy.js';

/** An HTTP proxy to `upstream` that answers 503 to the first `failures` requests of each path that matches. */
async function flakyProxy(upstream: string, match: RegExp, failures: number) {
  const seen: string[] = [];
  const failed = new Map<string, number>();
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const path = req.url ?? '';
    if (match.test(path) && (failed.get(path) ?? 0) < failures) {
      failed.set(path, (failed.get(path) ?? 0) + 1);
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"errors":[{"code":"UNAVAILABLE","message":"try later"}]}');
      return;
    }
    const [host, port] = upstream.split(':');
    const forward = request(
      { host, port: Number(port), method: req.method, path: req.url, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    hostPort: `127.0.0.1:${port}`,
    seen,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

test('5xx answers are retried: the manifest and the blob GETs get a 503 twice, the copy still succeeds', async (t) => {
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  const image = makeImage([50_000]);
  await pushImage(r.url, 'flaky/os', image);
  const layer = image.layers[0]!;
  const proxy = await flakyProxy(r.host, new RegExp(`/manifests/latest$|/blobs/${layer.digest}$`), 2);
  t.teardown(() => proxy.stop());
  const partialDir = await tempDir();
  t.teardown(() => rm(partialDir, { recursive: true, force: true }));
  const result = await copyImage(`${proxy.hostPort}/flaky/os:latest`, `${r.host}/copied/os:latest`, {
    source: { partialDir },
  });
  t.is(result.digest, image.manifest.digest);
  const manifestGets = proxy.seen.filter((line) => line === 'GET /v2/flaky/os/manifests/latest');
  t.true(manifestGets.length >= 3, manifestGets.join('\n'));
  t.true(proxy.seen.filter((line) => line.endsWith(`/blobs/${layer.digest}`)).length >= 2);
});

test('a failed download keeps its bytes; the next run resumes them with Range and verifies the whole blob', async (t) => {
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  const image = makeImage([1_500_000]);
  await pushImage(r.url, 'partial/os', image);
  const layer = image.layers[0]!;
  const proxy = await startCuttingProxy(r.host, new RegExp(`GET /v2/partial/os/blobs/${layer.digest}`), 600_000);
  t.teardown(() => proxy.stop());
  const partialDir = await tempDir();
  t.teardown(() => rm(partialDir, { recursive: true, force: true }));
  // First run: one attempt per blob, cut mid-way: the copy fails, the bytes stay.
  await t.throwsAsync(
    copyImage(`${proxy.hostPort}/partial/os:latest`, `${r.host}/copied/os:latest`, {
      source: { partialDir, retries: 1 },
    }),
    { message: /got \d+ of \d+ bytes after 1 attempts/ },
  );
  const kept = (await readdir(partialDir)).filter((name) => name.endsWith('.partial'));
  t.deepEqual(kept, [`${layer.digest.replace(':', '-')}.partial`]);
  const have = (await stat(join(partialDir, kept[0]!))).size;
  t.true(have > 0 && have < layer.size, `${have} of ${layer.size}`);
  // Second run (a new copy, as a new devpivot process would make): resumes from the kept bytes.
  const result = await copyImage(`${proxy.hostPort}/partial/os:latest`, `${r.host}/copied/os:latest`, {
    source: { partialDir },
  });
  t.is(result.digest, image.manifest.digest);
  const layerGets = proxy.requests.filter((head) => head.startsWith(`GET /v2/partial/os/blobs/${layer.digest}`));
  t.is(layerGets.length, 2);
  t.regex(layerGets[1]!, new RegExp(`\\r\\nrange: bytes=${have}-`, 'i'));
  t.deepEqual(await readdir(partialDir), [], 'the completed partial and its lock are gone');
});
