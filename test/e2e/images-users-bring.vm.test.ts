/**
 * The images users bring (issue 24), on real podman, skopeo and VMs: a derived image built by podman from a
 * Containerfile `FROM $BASE` (its /usr and /etc files and its whiteout checked over ssh after the pivot), and a
 * multi-arch index made by podman manifest and skopeo copy --all, given as `up --os-image oci-archive:FILE`: the node
 * is given the index's digest and reports the linux/amd64 child's. The two runs go side by side (two sessions, one
 * registry store).
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { repoRoot } from '../helpers/cli.js';
import { bootedVersions, leftoverDomains, runScenarioCli, type ScenarioRun } from './run-scenario.js';

let dir: string;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-images-users-bring-'));
});

test.after.always(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const pivotTargets = (events: ScenarioRun['events']) =>
  events.flatMap((e) => (e.kind === 'guest.pivot' ? [e.target] : []));
const lastImage = (events: ScenarioRun['events']) => {
  const last = events.filter((e) => e.kind === 'guest.booted').at(-1);
  return last && 'image' in last ? (last.image ?? '') : '';
};

test('derived-image: v3 = v2 + a /usr file, an /etc file and a whiteout, built by podman, pivoted to', async (t) => {
  t.timeout(25 * 60_000); // a podman build, a 61 MB import under TCG, two boots
  const run = await runScenarioCli('derived-image', { timeoutMs: 24 * 60_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.true(
    run.steps.some((step) => step.startsWith('✓ ssh node1 ') && step.endsWith('=~ /derived-files-ok/ within 2m')),
    run.steps.join('\n'),
  );
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  // podman built it: its build lines came through, and the pushed v3 is what the node booted, by digest.
  const logs = run.events.flatMap((e) => (e.kind === 'log' && e.source === 'podman' ? [e.message] : []));
  t.true(
    logs.some((line) => /STEP \d+\/\d+: RUN rm \/usr\/share\/pkgconfig\/udev\.pc/.test(line)),
    logs.join('\n'),
  );
  const v3 = run.events.filter((e) => e.kind === 'image.pushed' && e.ref.includes('/devpivot/v3@')).at(-1);
  const digest = v3 && 'digest' in v3 ? v3.digest : 'none';
  t.regex(lastImage(run.events), new RegExp(`/devpivot/v3@${digest}$`));
  t.deepEqual(leftoverDomains('derived-image'), []);
});

test('multi-arch: up --os-image oci-archive: of a podman-made index; the node boots the amd64 child', async (t) => {
  t.timeout(25 * 60_000);
  const archive = join(dir, 'index.ociarchive');
  const [index, child] = execFileSync(join(repoRoot, 'scripts', 'multi-arch-index.sh'), [archive], {
    encoding: 'utf8',
    timeout: 300_000,
  })
    .trim()
    .split('\n');
  t.regex(index ?? '', /^sha256:[0-9a-f]{64}$/);
  t.not(index, child);
  const run = await runScenarioCli('multi-arch', {
    command: ['up', 'scenarios/multi-arch.yaml', '--os-image', `oci-archive:${archive}`],
    timeoutMs: 24 * 60_000,
  });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  // The guest was given the index, and reports (bootc status imageDigest) the child.
  const targets = pivotTargets(run.events);
  t.true(targets.length > 0);
  for (const target of targets) t.regex(target, new RegExp(`@${index}$`));
  t.regex(lastImage(run.events), new RegExp(`@${child}$`));
  t.true(
    run.steps.some((step) => step.startsWith(`✓ assert node1 booted oci-archive:${archive} reboots=1`)),
    run.steps.join('\n'),
  );
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.false(
    console.some((line) => line.includes('manifest list')),
    'no manifest-list refusal',
  );
  t.deepEqual(leftoverDomains('multi-arch'), []);
});
