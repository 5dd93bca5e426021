import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('upgrade-tag: bootc and rpm-ostree nodes follow a tag: no change while it stays, v3 once it moves; --check fetches no layer; staged now, applied later', async (t) => {
  t.timeout(65 * 60_000);
  const run = await runScenarioCli('upgrade-tag', { timeoutMs: 62 * 60_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  // bc: the download-only v3 is not applied by the clean reboot in between (v2 again), then finalized
  t.deepEqual(bootedVersions(run.events, 'bc'), ['1', '2', '2', '3'], 'bc');
  t.deepEqual(bootedVersions(run.events, 'rpm'), ['1', '2', '3'], 'rpm');
  const skipped = run.events.flatMap((e) => (e.kind === 'guest.pivot.skipped' ? [`${e.node} ${e.reason}`] : []));
  t.deepEqual(skipped, ['bc no update available', 'rpm no upgrade available']);
  // The --check after the tag moved reads the manifest and the config, no layer (v3's is ~60 MB).
  const check = run.events.findIndex((e) => e.kind === 'step.start' && e.name.includes('Update available for'));
  const done = run.events.findIndex((e, i) => i > check && e.kind === 'step.pass');
  t.true(check > 0 && done > check, 'the --check step ran');
  const blobs = run.events
    .slice(check, done)
    .filter((e) => e.kind === 'registry.request' && e.node === 'bc' && e.path.includes('/blobs/'));
  t.true(blobs.length > 0, 'the check read the config blob');
  t.deepEqual(
    blobs.filter((e) => e.kind === 'registry.request' && e.bytes > 1024 * 1024),
    [],
  );
  t.is(run.events.filter((e) => e.kind === 'guest.failure').length, 0);
  t.deepEqual(leftoverDomains('upgrade-tag'), []);
});
