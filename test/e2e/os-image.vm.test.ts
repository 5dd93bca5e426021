/**
 * The installer's override knob end to end: `devpivot up --os-image 127.0.0.1:PORT/…@sha256:…` runs the default
 * scenario with that image as the target (osImageURLOverride). The image lives in another registry on the host's
 * loopback, which the guest cannot reach as written: devpivot pulls it into the embedded registry and the guest
 * pivots to it there, by the same digest.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { loadFixture } from '../../src/fixture/fixture.js';
import { buildAndPush } from '../../src/oscontainer/index.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/index.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

let other: RunningRegistry;
let dir: string;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'devpivot-os-image-'));
  other = await startRegistry({ storage: join(dir, 'registry') });
});

test.after.always(async () => {
  await other?.stop();
  await rm(dir, { recursive: true, force: true });
});

test.serial('up --os-image: the default scenario pivots to the given pullspec, by its digest', async (t) => {
  const fixture = await loadFixture();
  const v2 = fixture.versions.find((entry) => entry.version === '2')!;
  const image = await buildAndPush({ repo: fixture.repo, commit: v2.commit, target: `${other.address}/os/fixture:v2` });
  const run = await runScenarioCli('os-image', { command: ['up', '--os-image', image.pinned] });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const digest = image.pinned.slice(image.pinned.indexOf('@') + 1);
  const targets = run.events.flatMap((e) => (e.kind === 'guest.pivot' ? [e.target] : []));
  t.true(targets.length > 0);
  for (const target of targets) t.regex(target, new RegExp(`^10\\.0\\.2\\.2:\\d+/devpivot/os/fixture@${digest}$`));
  const last = run.events.filter((e) => e.kind === 'guest.booted').at(-1);
  t.is(last && 'commit' in last ? last.commit : '', v2.commit);
  t.true(run.steps.includes(`✓ assert node1 booted ${image.pinned} reboots=1`), run.steps.join('\n'));
  t.deepEqual(leftoverDomains('os-image'), []);
});
