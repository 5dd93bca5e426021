/**
 * scenarios/lifecycle.yaml: the update lifecycle on a bootc and an rpm-ostree node that follow a tag. The same run
 * carries the checks of files that booted the same v1 and made the same first update: upgrade-tag.vm.test.ts (no
 * change while the tag stays, v3 once it moves, --check fetching no layer, staged now and applied later),
 * rollback.vm.test.ts (each tool's rollback boots the previous deployment without a pull, with its own /etc),
 * etc-merge.vm.test.ts (rpm: ostree's three-way /etc merge across the first update, /usr/etc holding v2's default of
 * the file edited locally) and old-to-new-bootc.vm.test.ts (bc: the first-boot `bootc switch` to a native v2, its
 * console lines and progress events, the boot identified by the image digest). A switch to the image a node runs
 * is checked on power-loss's chunked node.
 */
import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('lifecycle: bootc and rpm-ostree nodes follow a tag (no change while it stays, v3 once it moves; --check fetches no layer; staged now, applied later), then roll back to v2 pulling nothing, each deployment with its /etc; the first update merges /etc three ways; legacy-booted v1 bootc-switches to a native v2', async (t) => {
  t.timeout(65 * 60_000);
  const run = await runScenarioCli('lifecycle', { timeoutMs: 62 * 60_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  // bc: the download-only v3 is not applied by the clean reboot in between (v2 again), then finalized; rolled back
  t.deepEqual(bootedVersions(run.events, 'bc'), ['1', '2', '2', '3', '2'], 'bc');
  t.deepEqual(bootedVersions(run.events, 'rpm'), ['1', '2', '3', '2'], 'rpm');
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
  // No re-pull: once a node's rollback step started, its registry port serves it no blob.
  for (const node of ['rpm', 'bc']) {
    const start = run.events.findIndex((e) => e.kind === 'step.start' && e.name === `rollback ${node}`);
    t.true(start > 0, `rollback ${node} ran`);
    const pulls = run.events
      .slice(start)
      .filter((e) => e.kind === 'registry.request' && e.node === node && e.path.includes('/blobs/'));
    t.deepEqual(pulls, [], `${node} pulled nothing after its rollback`);
  }
  t.is(run.events.filter((e) => e.kind === 'guest.failure').length, 0);

  // (etc-merge) the /etc merge across rpm's first update, /usr/etc/fixture/both.conf being v2's new default
  t.true(
    run.steps.some((step) => step.startsWith('✓ ssh rpm') && step.includes('/usr/etc/fixture/both.conf')),
    run.steps.join('\n'),
  );
  // (old-to-new-bootc) bc's first boot: bootc switch to v2, which it imported in full, then queued and rebooted into
  for (const step of [
    '✓ expect bc ignition within 15m',
    '✓ expect bc console /layers already present: 0; layers needed: 1 \\(/ within 25m',
    '✓ expect bc pivot.staged within 20m',
    '✓ expect bc booted v2 within 25m',
  ])
    t.true(run.steps.includes(step), `${step}\n${run.steps.join('\n')}`);
  // Staged events come from the console: bc's first-boot switch (its unit logs there). Later requests run over
  // ssh and log as the step's lines.
  t.is(run.events.filter((e) => e.kind === 'guest.pivot' && e.node === 'bc' && e.phase === 'staged').length, 1);
  const pushed = run.events.find((e) => e.kind === 'image.pushed' && /\/devpivot\/v2@/.test(e.ref));
  const digest = pushed && 'digest' in pushed ? pushed.digest : '';
  t.regex(digest, /^sha256:[0-9a-f]{64}$/);
  const bc = run.events.filter((e) => 'node' in e && e.node === 'bc');
  const bcBoots = bc.flatMap((e, i) => (e.kind === 'guest.booted' ? [i] : []));
  // The followed tag's repository, pinned to the digest the switch resolved: v2's.
  const v2Boot = bc[bcBoots[1]!];
  t.regex(
    v2Boot && 'image' in v2Boot ? String(v2Boot.image) : '',
    new RegExp(`^10\\.0\\.2\\.2:\\d+/devpivot/stream@${digest}$`),
  );
  const firstBoot = bc.slice(0, bcBoots[1]);
  const console = firstBoot.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.true(console.some((line) => /Queued for next boot: 10\.0\.2\.2:\d+\/devpivot\/stream:stable$/.test(line)));
  t.true(console.some((line) => line.endsWith(`  Digest: ${digest}`)));
  // bootc's own progress (--progress-fd on the unit's FIFO, relayed to the console): byte updates during the
  // copy (steps 0, bytes growing), then the required events: the layer fetched, the import, the staging's steps,
  // in that order (progress_jsonl.rs events through guest.progress). The last byte update may already carry every
  // byte (the copy finished, the layer not imported yet): it is still steps 0.
  const progress = firstBoot.filter(
    (e): e is Extract<typeof e, { kind: 'guest.progress' }> => e.kind === 'guest.progress' && e.tool === 'bootc',
  );
  const fetched = progress.findIndex((e) => e.task === 'pulling' && e.steps === 1);
  t.true(fetched > 0, 'byte updates come before the layer fetched');
  const updates = progress.slice(0, fetched);
  t.true(updates.every((e) => e.task === 'pulling' && e.steps === 0));
  const bytes = updates.map((e) => e.bytes ?? -1);
  t.deepEqual(
    bytes,
    [...bytes].sort((x, y) => x - y),
    'bytes only grow',
  );
  t.true(bytes.every((b) => b >= 0 && b <= (updates[0]?.bytesTotal ?? 0)));
  const layer = progress[fetched]!;
  t.true(layer.bytes === layer.bytesTotal && (layer.bytes ?? 0) > 0 && !layer.partial);
  t.deepEqual(
    progress.slice(fetched).map((e) => `${e.task} ${e.steps}/${e.stepsTotal}`),
    [
      'pulling 1/1',
      'importing 0/1',
      'importing 1/1',
      'staging 0/3',
      'staging 1/3',
      'staging 1/3',
      'staging 2/3',
      'staging 3/3',
    ],
  );
  t.deepEqual(leftoverDomains('lifecycle'), []);
});
