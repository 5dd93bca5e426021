/**
 * The images users bring (issue 24), on real podman, skopeo and VMs, in one run of one node: a multi-arch index made
 * by podman manifest and skopeo copy --all, given as `up scenarios/derived-image.yaml --os-image oci-archive:FILE`:
 * the node is given the index's digest and reports the linux/amd64 child's (native v2); then a derived image built
 * by podman from a Containerfile `FROM $BASE` (v2 by digest), to which it switches fetching only the derived layers
 * (its /usr and /etc files and its whiteout checked over ssh). (These were two runs of two nodes, each booting v1
 * and importing v2 in full.)
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { repoRoot } from '../helpers/cli.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

let dir: string;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-images-users-bring-'));
});

test.after.always(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('images users bring: up --os-image oci-archive: of a podman-made index boots the amd64 child; then a podman-built derived image (a /usr file, an /etc file, a whiteout) fetches only its own layers', async (t) => {
  t.timeout(30 * 60_000); // the index (a build, podman), a podman build, an import under TCG, three boots
  const archive = join(dir, 'index.ociarchive');
  const [index, child] = execFileSync(join(repoRoot, 'scripts', 'multi-arch-index.sh'), [archive], {
    encoding: 'utf8',
    timeout: 300_000,
  })
    .trim()
    .split('\n');
  t.regex(index ?? '', /^sha256:[0-9a-f]{64}$/);
  t.not(index, child);
  const run = await runScenarioCli('derived-image', {
    command: ['up', 'scenarios/derived-image.yaml', '--os-image', `oci-archive:${archive}`],
    timeoutMs: 28 * 60_000,
  });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.true(
    run.steps.every((step) => step.startsWith('✓ ')),
    run.steps.join('\n'),
  );
  t.deepEqual(bootedVersions(run.events), ['1', '2', '2']);
  const boots = run.events.filter((e) => e.kind === 'guest.booted');
  const imageOf = (boot: (typeof boots)[number] | undefined) => (boot && 'image' in boot ? (boot.image ?? '') : '');

  // (multi-arch) The guest was given the index on its first boot, and reports (bootc status imageDigest) the child.
  const secondBoot = run.events.indexOf(boots[1]!);
  const firstTargets = run.events.slice(0, secondBoot).flatMap((e) => (e.kind === 'guest.pivot' ? [e.target] : []));
  t.true(firstTargets.length > 0);
  for (const target of firstTargets) t.regex(target, new RegExp(`@${index}$`));
  t.regex(imageOf(boots[1]), new RegExp(`@${child}$`));
  t.true(
    run.steps.some((step) => step.startsWith(`✓ expect node1 booted oci-archive:${archive} within`)),
    run.steps.join('\n'),
  );
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.false(
    console.some((line) => line.includes('manifest list')),
    'no manifest-list refusal',
  );

  // (derived-image) podman built it: its build lines came through, and the pushed v3 is what the node booted last,
  // by digest; its files were checked over ssh.
  const logs = run.events.flatMap((e) => (e.kind === 'log' && e.source === 'podman' ? [e.message] : []));
  t.true(
    logs.some((line) => /STEP \d+\/\d+: RUN rm \/usr\/share\/pkgconfig\/udev\.pc/.test(line)),
    logs.join('\n'),
  );
  const v3 = run.events.filter((e) => e.kind === 'image.pushed' && e.ref.includes('/devpivot/v3@')).at(-1);
  const digest = v3 && 'digest' in v3 ? v3.digest : 'none';
  t.regex(imageOf(boots[2]), new RegExp(`/devpivot/v3@${digest}$`));
  t.true(
    run.steps.some((step) => step.startsWith('✓ ssh node1 ') && step.endsWith('=~ /derived-files-ok/ within 2m')),
    run.steps.join('\n'),
  );
  // The switch to v3 (over ssh: its lines are logged as the node's) fetched only what the node lacked: v2's layer,
  // the child's, is v3's first.
  const said = run.events.flatMap((e) => (e.kind === 'log' && e.source === 'node1' ? [e.message] : []));
  t.true(
    said.some((line) => /^layers already present: 1; layers needed: \d+ \(/.test(line)),
    said.join('\n'),
  );
  t.deepEqual(leftoverDomains('derived-image'), []);
});
