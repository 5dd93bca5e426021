/**
 * Issue 11 item 3: a legacy node whose first boot lacks mcd-write-pivot-reboot.service stages the pivot and never
 * reboots (openshift/pivot reboots only with --reboot or /run/pivot/reboot-needed); devpivot reports that as a
 * failure naming the cause, not as a timeout of the next expect.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('staged without the reboot-needed unit: a named failure, and the node stays on v1', async (t) => {
  t.timeout(25 * 60_000);
  const dir = mkdtempSync(join(tmpdir(), 'devpivot-staged-e2e-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'staged-no-reboot.yaml');
  writeFileSync(
    file,
    `name: staged-no-reboot
nodes:
  node1:
    pivot: fixture:2
    ignition: { systemd: { units: [ { name: mcd-write-pivot-reboot.service, enabled: false } ] } }
steps:
  - up
  - expect: { event: pivot.staged, within: 8m }
  - expect: { event: failure, match: 'did not reboot .*reboot-needed', within: 5m }
  - assert: { booted: fixture:1, reboots: 0, failed: true }
`,
  );
  const run = await runScenarioCli('staged-no-reboot', { file });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  const failure = run.events.find((e) => e.kind === 'guest.failure');
  t.regex(
    failure && 'reason' in failure ? failure.reason : '',
    /^the pivot staged \S+ but node1 did not reboot within 2m: pivot reboots only with --reboot or when \/run\/pivot\/reboot-needed exists/,
  );
  t.deepEqual(bootedVersions(run.events), ['1']);
  // In the guest: pivot staged the deployment and ran to its end (its last line, the kernel-args check of the
  // tuning file), and in the two minutes the watchdog gave it nothing asked for a reboot and none happened.
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  const staged = console.findIndex((line) => /pivot\[\d+\]: Staging deployment\.\.\.done/.test(line));
  t.true(staged >= 0, 'the deployment was staged');
  t.true(
    console
      .slice(staged)
      .some((line) =>
        /pivot\[\d+\]: I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ root\.go:402\] unable to parse tuning file /.test(line),
      ),
    'pivot ran to its end',
  );
  t.false(console.some((line) => /Running: systemctl reboot|reboot: Restarting system/.test(line)));
  t.deepEqual(leftoverDomains('staged-no-reboot'), []);
});
