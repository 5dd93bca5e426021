import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test('rollback: rpm-ostree rollback and bootc rollback boot the previous deployment again, pulling nothing, each with its /etc; a bootc switch to the booted image is skipped', async (t) => {
  t.timeout(65 * 60_000);
  const run = await runScenarioCli('rollback', { timeoutMs: 62 * 60_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events, 'rpm'), ['1', '2', '1']);
  t.deepEqual(bootedVersions(run.events, 'bc'), ['1', '2', '3', '2']);
  // No re-pull: once a node's rollback step started, its registry port serves it no blob.
  for (const node of ['rpm', 'bc']) {
    const start = run.events.findIndex((e) => e.kind === 'step.start' && e.name === `rollback ${node}`);
    t.true(start > 0, `rollback ${node} ran`);
    const pulls = run.events
      .slice(start)
      .filter((e) => e.kind === 'registry.request' && e.node === node && e.path.includes('/blobs/'));
    t.deepEqual(pulls, [], `${node} pulled nothing after its rollback`);
  }
  // bootc's answer to a switch to the image it runs is a skipped pivot, nothing staged.
  const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
  t.deepEqual(
    skipped.map((e) =>
      e.kind === 'guest.pivot.skipped' ? [e.node, e.reason, e.target.includes('/devpivot/v2@')] : [],
    ),
    [['bc', 'image specification is unchanged', true]],
  );
  // Staged events come from the console: bc's first-boot switch to v2 (its unit logs there). The pivot steps' bootc
  // switch runs over ssh, its lines are the step's; that the skipped one staged nothing, the assert step's reboot
  // count says (3: v2, v3, the rollback).
  t.is(run.events.filter((e) => e.kind === 'guest.pivot' && e.node === 'bc' && e.phase === 'staged').length, 1);
  t.is(run.events.filter((e) => e.kind === 'guest.failure').length, 0);
  t.deepEqual(leftoverDomains('rollback'), []);
});
