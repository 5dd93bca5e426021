/**
 * Pull-through from an upstream that wants credentials (distribution with htpasswd Basic auth): the embedded
 * registry logs in with what the auth files hold, as `devpivot pull` does; without them the client gets a 503.
 */
import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { upstreamClient } from '../../src/oscontainer/index.js';
import { startRegistry } from '../../src/registry/index.js';
import { type DockerRegistry, startDockerRegistry, TEST_PASSWORD, TEST_USER } from '../oscontainer/docker-registry.js';
import { curl, makeImage, run, tempDir, writeOciLayout } from './helpers.js';

let work: string;
let upstream: DockerRegistry;
const image = makeImage([50_000]);
const REPO = 'openshift-release-dev/private';

test.before(async () => {
  work = await tempDir('devpivot-pull-through-auth-');
  upstream = await startDockerRegistry({ htpasswd: true });
  const layout = join(work, 'layout');
  await writeOciLayout(layout, image.manifest, [image.config, ...image.layers]);
  const push = await run('skopeo', [
    '--insecure-policy',
    'copy',
    '--preserve-digests',
    '--dest-tls-verify=false',
    '--dest-creds',
    `${TEST_USER}:${TEST_PASSWORD}`,
    `oci:${layout}:latest`,
    `docker://${upstream.hostPort}/${REPO}:latest`,
  ]);
  if (push.code !== 0) throw new Error(`skopeo push: ${push.stderr}`);
});

test.after.always(async () => {
  await upstream?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

test('with the upstream in the auth file the blob pulls through; without it, 503 saying the credentials failed', async (t) => {
  const authFile = join(work, 'auth.json');
  await writeFile(
    authFile,
    JSON.stringify({
      auths: { [upstream.hostPort]: { auth: Buffer.from(`${TEST_USER}:${TEST_PASSWORD}`).toString('base64') } },
    }),
  );
  const layer = image.layers[0]!;
  const withAuth = await startRegistry({
    storage: join(work, 'with-auth'),
    pullThrough: {
      upstream: upstreamClient(`http://${upstream.hostPort}`, { env: { HOME: work, REGISTRY_AUTH_FILE: authFile } }),
      covers: () => true,
    },
  });
  t.teardown(() => withAuth.stop());
  const out = join(work, 'layer');
  const got = await run('curl', ['-sS', '-f', '-o', out, `${withAuth.url}/v2/${REPO}/blobs/${layer.digest}`]);
  t.is(got.code, 0, got.stderr);
  t.is(
    `sha256:${createHash('sha256')
      .update(await readFile(out))
      .digest('hex')}`,
    layer.digest,
  );
  const manifest = await curl([`${withAuth.url}/v2/${REPO}/manifests/${image.manifest.digest}`]);
  t.is(manifest.status, 200);
  t.is(manifest.body, image.manifest.bytes.toString());

  const anonymous = await startRegistry({
    storage: join(work, 'anonymous'),
    pullThrough: {
      upstream: upstreamClient(`http://${upstream.hostPort}`, {
        env: { HOME: work, REGISTRY_AUTH_FILE: join(work, 'none.json') },
      }),
      covers: () => true,
    },
  });
  t.teardown(() => anonymous.stop());
  const refused = await curl([`${anonymous.url}/v2/${REPO}/blobs/${layer.digest}`]);
  t.is(refused.status, 503);
  const error = (JSON.parse(refused.body) as { errors: { code: string; message: string }[] }).errors[0];
  t.is(error?.code, 'UNAVAILABLE');
  t.regex(error?.message ?? '', /credentials|authenticat|401/i);
});
