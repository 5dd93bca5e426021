/**
 * `devpivot up --os-image PULLSPEC` through the built CLI, without a VM: a bad pullspec is refused before
 * anything starts; a good one becomes the default scenario's pivot target, which prepare pulls from where it is
 * (here a registry on 127.0.0.1 that records requests and holds nothing, so the run stops there, exit 2).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import test from 'ava';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

const UNREACHABLE = 'qemu+unix:///system?socket=/nonexistent/libvirt-sock';
const DIGEST = `sha256:${'a'.repeat(64)}`;

function workspace() {
  const dir = tempDir('devpivot-os-image-');
  const env = { DEVPIVOT_STATE_DIR: join(dir, 'state'), DEVPIVOT_CACHE_DIR: join(dir, 'cache') };
  return { dir, env, started: () => readdirSync(dir) };
}

/** A registry on 127.0.0.1 that answers every manifest with the distribution spec's MANIFEST_UNKNOWN. */
async function emptyRegistry() {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.url === '/v2/') {
      res.writeHead(200, { 'docker-distribution-api-version': 'registry/2.0' }).end('{}');
      return;
    }
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end(JSON.stringify({ errors: [{ code: 'MANIFEST_UNKNOWN', message: 'manifest unknown' }] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { port, requests, close: () => new Promise((resolve) => server.close(resolve)) };
}

test('--os-image with garbage or a short name: exit 2 with a clear error, nothing started', async (t) => {
  for (const [value, message] of [
    ['garbage!!', /error\[BAD_REFERENCE\]: --os-image: invalid image reference 'garbage!!'/],
    ['rhcos:4.6', /error\[BAD_REFERENCE\]: --os-image: 'rhcos:4.6' is not a full pullspec/],
    [`quay.io/os@sha256:abc`, /'sha256:abc' is not a sha256 digest/],
  ] as const) {
    const { env, started } = workspace();
    const result = await runCli(['up', '--os-image', value, '--json', '--connect', UNREACHABLE], { env });
    t.is(result.code, 2, value);
    t.regex(result.stderr, message);
    t.regex(result.stderr, /hint: /);
    t.is(result.stdout, '', 'no event: the run did not start');
    t.deepEqual(started(), [], 'no state, no cache: nothing started');
  }
});

test('--os-image on a file whose nodes have several targets: exit 2, nothing started', async (t) => {
  const { dir, env } = workspace();
  const file = join(dir, 'two.yaml');
  writeFileSync(file, 'nodes:\n  a: { pivot: fixture:2 }\n  b: { pivot: fixture:3 }\n');
  const result = await runCli(['up', file, '--os-image', `127.0.0.1:5000/os@${DIGEST}`, '--json'], { env });
  t.is(result.code, 2);
  t.regex(result.stderr, /--os-image overrides the one pivot target .* has 2: fixture:2, fixture:3/);
  t.is(result.stdout, '');
});

test('--os-image 127.0.0.1:PORT/…@sha256:… runs the default scenario with that target, pulled by prepare', async (t) => {
  const upstream = await emptyRegistry();
  t.teardown(upstream.close);
  const { env } = workspace();
  const pullspec = `127.0.0.1:${upstream.port}/os/rhcos@${DIGEST}`;
  const result = await runCli(['up', '--os-image', pullspec, '--json', '--connect', UNREACHABLE], { env });
  const events = result.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { kind: string; scenario?: string; name?: string; error?: string });
  t.is(result.code, 2, 'a set-up error: the image is not there');
  t.like(events[0], { kind: 'run.start', scenario: 'old-to-new' });
  const failed = events.find((event) => event.kind === 'step.fail');
  t.is(failed?.name, 'prepare');
  t.regex(failed?.error ?? '', /\/v2\/os\/rhcos\/manifests\/sha256:a{64} failed: 404 .*MANIFEST_UNKNOWN/);
  // The pull asked the upstream for exactly that manifest, by digest, and nothing was built from the fixture.
  t.true(upstream.requests.includes(`GET /v2/os/rhcos/manifests/${DIGEST}`), upstream.requests.join('\n'));
  t.false(events.some((event) => event.kind === 'image.built'));
});

test('up --help documents --os-image', async (t) => {
  const result = await runCli(['up', '--help']);
  t.is(result.code, 0);
  t.true(result.stdout.includes('--os-image PULLSPEC'), result.stdout);
  t.regex(result.stdout, /osImageURLOverride/);
});
