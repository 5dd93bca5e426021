import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test.serial('old-to-new-bootc: legacy-booted v1 switches to a native v2; switching again is unchanged', async (t) => {
  const run = await runScenarioCli('old-to-new-bootc');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.is(run.steps.length, 10, run.steps.join('\n'));
  t.deepEqual(run.steps.slice(0, 6), [
    '✓ prepare',
    '✓ up',
    '✓ expect node1 ignition within 3m',
    '✓ expect node1 console /layers already present: 0; layers needed: 1 \\(/ within 5m',
    '✓ expect node1 pivot.staged within 8m',
    '✓ expect node1 booted v2 within 5m',
  ]);
  t.true(run.steps.every((step) => step.startsWith('✓ ')));
  // One boot of each: the "unchanged" switch staged nothing and did not reboot.
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  const pushed = run.events.find((e) => e.kind === 'image.pushed');
  const digest = pushed && 'digest' in pushed ? pushed.digest : '';
  const last = run.events.filter((e) => e.kind === 'guest.booted').at(-1);
  t.regex(last && 'image' in last ? String(last.image) : '', new RegExp(`^10\\.0\\.2\\.2:\\d+/devpivot/v2@${digest}$`));
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.true(console.some((line) => /Queued for next boot: 10\.0\.2\.2:\d+\/devpivot\/v2@sha256:/.test(line)));
  t.true(console.some((line) => line.includes(`  Digest: ${digest}`)));
  // bootc's own progress (--progress-fd on the unit's FIFO, relayed to the console): byte updates during the
  // copy (steps 0, bytes growing), then the required events: the layer fetched, the import, the staging's steps,
  // in that order (progress_jsonl.rs events through guest.progress). The last byte update may already carry every
  // byte (the copy finished, the layer not imported yet): it is still steps 0.
  const progress = run.events.filter(
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
  t.deepEqual(leftoverDomains('old-to-new-bootc'), []);
});
