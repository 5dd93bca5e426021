/**
 * The report unit's script, run with sh and awk on this host against stand-ins for the guest's tools that print
 * what the fixture's rpm-ostree and bootc print (images/fixture/guest/): which tool it reads, and the `image` it
 * names for each kind of deployment.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { REPORT_SCRIPT } from '../../src/ignition/report-script.js';

const run = promisify(execFile);
const V1 = '1'.repeat(64);
const MERGE = 'e'.repeat(64);
const DIGEST = `sha256:${'d'.repeat(64)}`;
const REF = `10.0.2.2:5000/devpivot/v2@${DIGEST}`;

const rpmOstree = (deployment: object) =>
  JSON.stringify({ deployments: [{ osname: 'fixture', serial: 0, booted: true, staged: false, ...deployment }] });
const bootc = (booted: object | null) =>
  JSON.stringify({
    apiVersion: 'org.containers.bootc/v1',
    kind: 'BootcHost',
    spec: { image: null },
    status: { staged: null, booted, rollback: null, otherDeployments: [] },
  });

/**
 * Run the script with `tools` (name → JSON it prints for status) on PATH; returns the parsed report. `busybox`: with
 * busybox's sh, awk, sed and cat, as the fixture guest runs it (else this host's).
 */
async function report(tools: Record<string, string>, busybox = false): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-report-'));
  try {
    if (busybox) for (const tool of ['sh', 'awk', 'sed', 'cat']) await symlink('/bin/busybox', join(dir, tool));
    for (const [name, json] of Object.entries(tools)) {
      await writeFile(join(dir, `${name}.json`), json);
      await writeFile(join(dir, name), `#!/bin/sh\ncat '${join(dir, `${name}.json`)}'\n`);
      await chmod(join(dir, name), 0o755);
    }
    // The console is a file here: the host's /dev/console is not the test's.
    const console = join(dir, 'console');
    await writeFile(console, '');
    await writeFile(join(dir, 'report.sh'), REPORT_SCRIPT.replaceAll('/dev/console', console));
    const sh = busybox ? join(dir, 'sh') : 'sh';
    const { stdout } = await run(sh, [join(dir, 'report.sh')], { env: { PATH: `${dir}:/usr/bin:/bin` } });
    const line = stdout.trim();
    if (!line.startsWith('devpivot-report: ')) throw new Error(`no report line: ${stdout}`);
    if ((await readFile(console, 'utf8')).trim() !== line) throw new Error('the console got another line');
    return JSON.parse(line.slice('devpivot-report: '.length)) as Record<string, string>;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('rpm-ostree with a container origin: the merge commit, the version and the image by digest', async (t) => {
  const got = await report({
    'rpm-ostree': rpmOstree({
      checksum: MERGE,
      version: '2',
      'container-image-reference': `ostree-unverified-registry:${REF}`,
      'container-image-reference-digest': DIGEST,
    }),
  });
  t.like(got, { event: 'booted', version: '2', commit: MERGE, image: REF });
});

test('bootc with a booted image: bootc is read', async (t) => {
  const tools = {
    bootc: bootc({
      image: { image: { image: REF, transport: 'registry' }, version: '2', imageDigest: DIGEST },
      ostree: { stateroot: 'fixture', checksum: MERGE, deploySerial: 0 },
    }),
    'rpm-ostree': rpmOstree({ checksum: V1, version: '1' }),
  };
  for (const busybox of [false, true])
    t.like(await report(tools, busybox), { version: '2', commit: MERGE, image: REF }, busybox ? 'busybox' : 'sh');
});

test('bootc without a booted image (a pivot:// deployment): rpm-ostree still names the image', async (t) => {
  const pivot = `fixture.invalid/fixture-coreos@sha256:${V1}`;
  const got = await report({
    bootc: bootc({ image: null, ostree: { stateroot: 'fixture', checksum: V1, deploySerial: 0 } }),
    'rpm-ostree': rpmOstree({ checksum: V1, version: '1', 'custom-origin': [`pivot://${pivot}`, 'Image generated'] }),
  });
  t.like(got, { version: '1', commit: V1, image: pivot });
});

test("rpm-ostree: the booted deployment's values when it is not the first; a quote in a value survives", async (t) => {
  const json = JSON.stringify({
    deployments: [
      { osname: 'fixture', serial: 1, booted: false, staged: true, checksum: MERGE, version: '3' },
      { osname: 'fixture', serial: 0, booted: true, staged: false, checksum: V1, version: "2 (it's $HOME `x`)" },
    ],
  });
  for (const busybox of [false, true]) {
    const got = await report({ 'rpm-ostree': json }, busybox);
    t.like(got, { version: "2 (it's $HOME `x`)", commit: V1, image: '' }, busybox ? 'busybox' : 'sh');
  }
});

test('rpm-ostree without a booted deployment: ostree admin status is read instead', async (t) => {
  const status = `* fixture ${V1}.0\n    Version: 7\n    origin refspec: x\n`;
  const got = await report({
    'rpm-ostree': JSON.stringify({ deployments: [{ osname: 'fixture', booted: false, checksum: MERGE }] }),
    ostree: status,
  });
  t.like(got, { version: '7', commit: V1, image: '' });
});
