/**
 * Issue 11 item 3: a legacy node whose first boot lacks mcd-write-pivot-reboot.service stages the pivot and never
 * reboots (openshift/pivot reboots only with --reboot or /run/pivot/reboot-needed); devpivot reports that as a
 * failure naming the cause, not as a timeout of the next expect.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('staged without the reboot-needed unit: a named failure, and the node stays on v1', async (t) => {
  t.timeout(25 * 60_000);
  const file = join(mkdtempSync(join(tmpdir(), 'devpivot-staged-e2e-')), 'staged-no-reboot.yaml');
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
  t.deepEqual(leftoverDomains('staged-no-reboot'), []);
});
