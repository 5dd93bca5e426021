/** The registry's CA and the node's pull secret in the generated Ignition (ignition/trust-files.ts). */
import test from 'ava';
import { DRIVERS, pivotDrivers } from '../../src/drivers/index.js';
import { generateIgnition } from '../../src/ignition/generate.js';
import { decodeDataUrl, type IgnitionConfig } from '../../src/ignition/render.js';
import { SYSTEM_ANCHOR } from '../../src/ignition/trust-files.js';
import { runIgnitionValidate } from '../../src/ignition/validate.js';
import { newCredentials, pullSecret } from '../../src/registry/auth.js';

const IMAGE = `10.0.2.2:40001/devpivot/os@sha256:${'c'.repeat(64)}`;
const MCO_IMAGE = `10.0.2.2:40001/devpivot/mco@sha256:${'d'.repeat(64)}`;
const CA = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUdevpivot\n-----END CERTIFICATE-----\n';
type File = { path: string; mode?: number; contents?: { source?: string } };
const files = (config: IgnitionConfig) => (config.storage as { files?: File[] } | undefined)?.files ?? [];
const text = (file: File | undefined) => (file?.contents?.source ? decodeDataUrl(file.contents.source) : undefined);

for (const driver of pivotDrivers()) {
  test(`${driver}: a TLS registry's CA in certs.d and the RHCOS anchors, no insecure entry; the secret where the tool reads it`, async (t) => {
    const secret = pullSecret(newCredentials(), ['10.0.2.2:40001']);
    const config = generateIgnition({
      driver,
      image: IMAGE,
      registry: { hostPort: '10.0.2.2:40001', insecure: false, caPem: CA, pullSecret: secret },
      ...(driver === 'mcd' ? { mcoImage: MCO_IMAGE } : {}),
    });
    const all = files(config);
    t.is(text(all.find((f) => f.path === '/etc/containers/certs.d/10.0.2.2:40001/ca.crt')), CA);
    t.is(text(all.find((f) => f.path === SYSTEM_ANCHOR)), CA);
    t.false(
      all.some((f) => f.path.startsWith('/etc/containers/registries.conf')),
      'no registries.conf entry',
    );
    t.false(JSON.stringify(config).includes('insecure'));
    const paths = DRIVERS[driver].pullSecretPaths;
    t.true(paths.length > 0);
    for (const path of paths) {
      const written = all.filter((f) => f.path === path);
      t.is(written.length, 1, `${path} once (the mcd driver's {} replaced)`);
      t.is(written[0]!.mode, 0o600);
      t.is(text(written[0]), secret);
    }
    const result = await runIgnitionValidate(config);
    t.true(result.ok, result.output);
  });
}

test('pull secret paths follow the tools: kubelet config.json for pivot and the MCD, /etc/ostree/auth.json for ostree-ext', (t) => {
  t.deepEqual(DRIVERS.legacy.pullSecretPaths, ['/var/lib/kubelet/config.json']);
  t.deepEqual(DRIVERS.mcd.pullSecretPaths, ['/var/lib/kubelet/config.json']);
  t.deepEqual(DRIVERS['rpm-ostree'].pullSecretPaths, ['/etc/ostree/auth.json']);
  t.deepEqual(DRIVERS.bootc.pullSecretPaths, ['/etc/ostree/auth.json']);
});

test('without a pull secret the mcd driver keeps its empty kubelet config.json and no ostree auth file is written', (t) => {
  const config = generateIgnition({
    driver: 'mcd',
    image: IMAGE,
    mcoImage: MCO_IMAGE,
    registry: { hostPort: '10.0.2.2:40001', insecure: false, caPem: CA },
  });
  const kubelet = files(config).filter((f) => f.path === '/var/lib/kubelet/config.json');
  t.is(kubelet.length, 1);
  t.is(text(kubelet[0])?.trim(), '{}');
  t.false(files(config).some((f) => f.path === '/etc/ostree/auth.json'));
});

test('the pull secret is the auth.json format: base64 of user:password per host', (t) => {
  const credentials = { username: 'devpivot', password: 'p4ss:word' };
  const parsed = JSON.parse(pullSecret(credentials, ['10.0.2.2:1', '127.0.0.1:1'])) as {
    auths: Record<string, { auth: string }>;
  };
  t.deepEqual(Object.keys(parsed.auths), ['10.0.2.2:1', '127.0.0.1:1']);
  t.is(Buffer.from(parsed.auths['10.0.2.2:1']!.auth, 'base64').toString(), 'devpivot:p4ss:word');
});
