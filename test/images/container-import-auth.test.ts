/**
 * The fixture's container import (rpm-ostree's and bootc's, images/fixture/guest/container-import.sh) takes its
 * credentials as ostree-ext does: the first of /run/ostree, /etc/ostree, /usr/lib/ostree auth.json, else anonymous.
 * Run on this host with busybox sh and real skopeo against devpivot's registry requiring credentials; the three
 * paths are moved under a temporary root (the only rewrite).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { newCredentials, pullSecret } from '../../src/registry/auth.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/server.js';
import { repoRoot } from '../helpers/cli.js';
import { makeImage, pushImage } from '../registry/helpers.js';

const exec = promisify(execFile);
let dir: string;
let registry: RunningRegistry;
let script: string;
const credentials = newCredentials();
const image = makeImage([1000]);

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-import-auth-'));
  registry = await startRegistry({ storage: join(dir, 'registry'), auth: credentials });
  const basic = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  const realFetch = globalThis.fetch;
  globalThis.fetch = ((input: string | URL, init: RequestInit = {}) =>
    realFetch(input, {
      ...init,
      headers: { ...(init.headers as Record<string, string>), authorization: basic },
    })) as typeof fetch;
  try {
    await pushImage(registry.url, 'os', image, 'v2');
  } finally {
    globalThis.fetch = realFetch;
  }
  await writeFile(join(dir, 'registries.conf'), `[[registry]]\nlocation = "${registry.address}"\ninsecure = true\n`);
  const text = (await readFile(join(repoRoot, 'images', 'fixture', 'guest', 'container-import.sh'), 'utf8'))
    .replace(/^ci_tmp=.*$/m, `ci_tmp=${join(dir, 'import')}`)
    .replace(/\/run\/ostree\/|\/etc\/ostree\/|\/usr\/lib\/ostree\//g, (path) => `${dir}${path}`);
  script = join(dir, 'container-import.sh');
  await writeFile(script, text);
});

test.after.always(async () => {
  await registry?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function fetchManifest(env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const program = [
    `skopeo() { command skopeo --registries-conf ${join(dir, 'registries.conf')} "$@"; }`,
    'die() { echo "error: $*" >&2; exit 1; }',
    `. ${script}`,
    `ci_fetch ${registry.address}/os:v2`,
    'echo "$ci_digest"',
  ].join('\n');
  try {
    const { stdout, stderr } = await exec('busybox', ['sh', '-c', program], { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    return error as { code: number; stdout: string; stderr: string };
  }
}

test.serial('without an ostree auth file the pull is anonymous and the 401 is the error', async (t) => {
  // A containers auth file with the credentials must not be read: ostree-ext forces anonymous pulls.
  const containersAuth = join(dir, 'containers-auth.json');
  await writeFile(containersAuth, pullSecret(credentials, [registry.address]), { mode: 0o600 });
  const run = await fetchManifest({ REGISTRY_AUTH_FILE: containersAuth });
  t.is(run.code, 1);
  t.regex(run.stderr, /^error: Creating importer: Fetching manifest: .*(unauthorized|authentication required)/m);
});

for (const where of ['/usr/lib/ostree/', '/etc/ostree/', '/run/ostree/']) {
  test.serial(`with ${where}auth.json the manifest is fetched with its credentials`, async (t) => {
    await mkdir(`${dir}${where}`, { recursive: true });
    await writeFile(`${dir}${where}auth.json`, pullSecret(credentials, [registry.address]), { mode: 0o600 });
    const run = await fetchManifest();
    t.is(run.code, 0, run.stderr);
    t.is(run.stdout.trim(), image.manifest.digest);
  });
}

test.serial('/run/ostree comes first: a wrong secret there wins over a right one in /etc/ostree', async (t) => {
  await writeFile(
    `${dir}/run/ostree/auth.json`,
    pullSecret({ username: 'devpivot', password: 'wrong' }, [registry.address]),
  );
  const run = await fetchManifest();
  t.is(run.code, 1);
  t.regex(run.stderr, /unauthorized|authentication required/);
});
