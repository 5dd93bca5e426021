/**
 * A native driver given an image without the bootable label: an rpm-ostree node pulls (through devpivot's
 * registry, mirrored from an "external" one) a legacy oscontainer. Scenario validation cannot know a pulled
 * image's format, so the guest's rpm-ostree refuses it with ostree-ext's message, devpivot reports that reason as
 * the node's failure, and the node stays on v1 without a reboot.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { loadFixture } from '../../src/fixture/fixture.js';
import { buildAndPush } from '../../src/oscontainer/index.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/index.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

let external: RunningRegistry;
let dir: string;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-native-refused-'));
  external = await startRegistry({ storage: join(dir, 'registry') });
});

test.after.always(async () => {
  await external?.stop();
  await rm(dir, { recursive: true, force: true });
});

test.serial('native-refused: rpm-ostree refuses a legacy image; the failure carries the guest reason', async (t) => {
  const fixture = await loadFixture();
  const v2 = fixture.versions.find((entry) => entry.version === '2')!;
  const legacy = await buildAndPush({
    repo: fixture.repo,
    commit: v2.commit,
    target: `${external.address}/os/v2:latest`,
  });
  t.is(legacy.format, 'legacy');
  const file = join(dir, 'native-refused.yaml');
  await writeFile(
    file,
    [
      'name: native-refused',
      'oscontainers:',
      `  legacy: { pull: '${legacy.pinned}' }`,
      'nodes:',
      '  node1: { driver: rpm-ostree, pivot: legacy }',
      'steps:',
      '  - up',
      "  - expect: { event: failure, match: 'Target image does not have ostree\\.bootable label', within: 8m }",
      '  - wait: 20s',
      '  - assert: { booted: fixture:1, reboots: 0 }',
      '',
    ].join('\n'),
  );
  const run = await runScenarioCli('native-refused', { file });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [e.reason] : []));
  t.true(
    failures.some((reason) => /error: .*Target image does not have ostree\.bootable label/.test(reason)),
    failures.join('\n'),
  );
  t.deepEqual(bootedVersions(run.events), ['1']);
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.true(console.some((line) => line.includes('Pulling manifest: ostree-unverified-registry:')));
  t.false(
    console.some((line) => line.includes('Importing: ')),
    'refused before the import',
  );
  t.deepEqual(leftoverDomains('native-refused'), []);
});
