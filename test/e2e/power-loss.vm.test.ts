/**
 * scenarios/power-loss.yaml: two legacy nodes that stage v2 and never boot it. node1 loses power while staging,
 * boots v1, stages again and does not reboot (first boot only), then loses power with v2 staged in full and boots
 * v1 again (this was fixture-power-loss.vm.test.ts's "power loss right after the deployment is staged"). The other
 * node (issue 11 item 3, this was staged-no-reboot.vm.test.ts) lacks mcd-write-pivot-reboot.service on its first
 * boot: it stages the pivot and never reboots (openshift/pivot reboots only with --reboot or
 * /run/pivot/reboot-needed); devpivot reports that as a failure naming the cause, not as a timeout of the next
 * expect. The two nodes' two-minute reboot watchdogs run side by side.
 *
 * The same run carries chunked-update.vm.test.ts's node and checks (`chunked`): fixture v1 chunked, then v2
 * chunked, of which it fetches only the 2 changed layers; then a switch to the image it runs is skipped (this was
 * rollback.vm.test.ts's last check, from old-to-new-bootc.vm.test.ts).
 */
import test from 'ava';
import { loadFixture } from '../../src/fixture/fixture.js';
import { bootedVersions, consoleOf, eventsOf, leftoverDomains, runScenarioCli } from './run-scenario.js';

const NO_REBOOT = 'no-reboot-unit';

test('power-loss: power cut while staging, power back: the node boots v1 (never bricked), stages again and stays; cut again with v2 staged: v1 again; staged without the reboot-needed unit: a named failure, and the node stays on v1; v1 chunked, then v2 chunked fetches only the 2 changed layers; a switch to the image it runs is skipped', async (t) => {
  t.timeout(47 * 60_000);
  const fixture = await loadFixture();
  const run = await runScenarioCli('power-loss', { timeoutMs: 46 * 60_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.true(
    run.steps.every((step) => step.startsWith('✓ ')),
    run.steps.join('\n'),
  );

  // node1
  const node1 = eventsOf(run.events, 'node1');
  t.deepEqual(bootedVersions(run.events), ['1', '1', '1']);
  // (the stops before the last boot: the run's own teardown may stop the domain once more)
  const lastBoot = node1.findLastIndex((e) => e.kind === 'guest.booted');
  t.is(node1.slice(0, lastBoot).filter((e) => e.kind === 'vm.stopped').length, 2, 'the plug was pulled twice');
  // pivot ran on the first two boots: two pulls, the second one staged; the only failure is the named missing reboot.
  t.is(node1.filter((e) => e.kind === 'guest.pivot' && e.phase === 'pulling').length, 2);
  const failures = node1.flatMap((e) => (e.kind === 'guest.failure' ? [e.reason] : []));
  t.is(failures.length, 1, failures.join('\n'));
  t.regex(failures[0]!, /ConditionFirstBoot=true\), and this was boot 2 of node1/);
  // The cut with v2 staged (it lived in /run, never finalized): the next boot is v1, by its commit.
  const staged = node1.findLastIndex((e) => e.kind === 'guest.pivot' && e.phase === 'staged');
  const lastCut = node1.slice(0, lastBoot).findLastIndex((e) => e.kind === 'vm.stopped');
  t.true(staged >= 0 && lastCut > staged, 'the second cut came after v2 was staged again');
  const third = node1[lastBoot];
  t.like(third, { version: '1', commit: fixture.versions[0]!.commit });

  // no-reboot-unit
  const failure = eventsOf(run.events, NO_REBOOT).find((e) => e.kind === 'guest.failure');
  t.regex(
    failure && 'reason' in failure ? failure.reason : '',
    new RegExp(
      `^the pivot staged \\S+ but ${NO_REBOOT} did not reboot within 2m: pivot reboots only with --reboot or when /run/pivot/reboot-needed exists`,
    ),
  );
  t.deepEqual(bootedVersions(run.events, NO_REBOOT), ['1']);
  // In the guest: pivot staged the deployment and ran to its end (its last line, the kernel-args check of the
  // tuning file), and in the two minutes the watchdog gave it nothing asked for a reboot and none happened.
  const console = consoleOf(run.events, NO_REBOOT);
  const stagedLine = console.findIndex((line) => /pivot\[\d+\]: Staging deployment\.\.\.done/.test(line));
  t.true(stagedLine >= 0, 'the deployment was staged');
  t.true(
    console
      .slice(stagedLine)
      .some((line) =>
        /pivot\[\d+\]: I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ root\.go:402\] unable to parse tuning file /.test(line),
      ),
    'pivot ran to its end',
  );
  t.false(console.some((line) => /Running: systemctl reboot|reboot: Restarting system/.test(line)));

  // chunked: bootc's own count, from what the pivot step's request printed (logged per line)
  t.deepEqual(bootedVersions(run.events, 'chunked'), ['1', '1', '2']);
  const said = run.events.flatMap((e) => (e.kind === 'log' && e.source === 'chunked' ? [e.message] : []));
  t.true(
    said.some((line) => /^layers already present: 7; layers needed: 2 \(\d/.test(line)),
    said.join('\n'),
  );
  // From the registry's own log: the blobs the chunked node fetched, whole.
  const requests = run.events.filter(
    (e): e is Extract<typeof e, { kind: 'registry.request' }> =>
      e.kind === 'registry.request' && e.node === 'chunked' && e.method === 'GET' && e.path.includes('/blobs/'),
  );
  const v2Blobs = requests.filter((e) => e.path.includes('/devpivot/v2c/'));
  const v1Blobs = requests.filter((e) => e.path.includes('/devpivot/v1c/'));
  // Distinct blobs: the 9 layers (v1c) or the 2 changed ones (v2c), and the image config (read by skopeo inspect
  // and copy); the step `assert: { fetched, layers }` counted the layers alone.
  const distinct = (list: typeof requests) => new Set(list.map((e) => e.path.split('/').pop())).size;
  t.is(distinct(v1Blobs), 10, v1Blobs.map((e) => e.path).join('\n'));
  t.is(distinct(v2Blobs), 3, v2Blobs.map((e) => e.path).join('\n'));
  const fetchedBytes = v2Blobs.reduce((sum, e) => sum + e.bytes, 0);
  const imageBytes = v1Blobs.reduce((sum, e) => sum + e.bytes, 0);
  t.true(fetchedBytes < imageBytes / 10, `v2 fetched ${fetchedBytes} of ${imageBytes} bytes`);
  t.log(`v2c fetched ${fetchedBytes} bytes; the whole v1c image is ${imageBytes} bytes`);
  // A switch to the image it runs: bootc's answer is a skipped pivot, nothing staged, no reboot (one staged event:
  // the first-boot switch, which logs on the console; the pivot steps' switches run over ssh).
  const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
  t.deepEqual(
    skipped.map((e) =>
      e.kind === 'guest.pivot.skipped' ? [e.node, e.reason, e.target.includes('/devpivot/v2c@')] : [],
    ),
    [['chunked', 'image specification is unchanged', true]],
  );
  t.true(said.includes('Image specification is unchanged.'), said.join('\n'));
  t.is(run.events.filter((e) => e.kind === 'guest.pivot' && e.node === 'chunked' && e.phase === 'staged').length, 1);
  t.deepEqual(leftoverDomains('power-loss'), []);
});
