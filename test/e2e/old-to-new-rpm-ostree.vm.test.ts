/**
 * scenarios/old-to-new-rpm-ostree.yaml: legacy-booted v1 rebases to a native v2, then a rebase to the reference it
 * runs is refused by rpm-ostree (this was same-ref-rpm-ostree.vm.test.ts, which booted the same v1 and made the
 * same first rebase). One VM, two boots.
 */
import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test.serial(
  'old-to-new-rpm-ostree: legacy-booted v1 rebases to a native v2 by digest; the same ref again is refused',
  async (t) => {
    t.timeout(25 * 60_000);
    const run = await runScenarioCli('old-to-new-rpm-ostree');
    t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
    t.deepEqual(run.steps, [
      '✓ prepare',
      '✓ up',
      '✓ expect node1 ignition within 3m',
      '✓ expect node1 pivot.pulling within 5m',
      '✓ expect node1 console /Importing: ostree-unverified-registry:\\S+ \\(digest: sha256:[0-9a-f]{64}\\)/ within 3m',
      '✓ expect node1 pivot.staged within 8m',
      '✓ expect node1 booted v2 within 5m',
      '✓ assert node1 booted v2 reboots=1 failed=false',
      "✓ ssh node1 'sudo -n rpm-ostree status --json | jq -er '.deployments[]...' =~ /(^|\\n)sha256:[0-9a-f]{64}(\\n|$)/ within 3m",
      '✓ pivot node1 to v2',
      '✓ expect node1 pivot.skipped within 3m',
      "✓ ssh node1 'test ! -e /run/ostree/staged-deployment && sudo -n rpm-os...' =~ /(^|\\n)0(\\n|$)/ within 3m",
      '✓ wait 15s',
      '✓ assert node1 booted v2 reboots=1 failed=false',
    ]);
    // One boot of each: the refused rebase staged nothing and did not reboot.
    t.deepEqual(bootedVersions(run.events), ['1', '2']);
    const pushed = run.events.find((e) => e.kind === 'image.pushed');
    const digest = pushed && 'digest' in pushed ? pushed.digest : '';
    t.regex(digest, /^sha256:[0-9a-f]{64}$/);
    const boots = run.events.filter((e) => e.kind === 'guest.booted');
    const last = boots.at(-1);
    // The new boot names the image by its manifest digest, and its checksum is the merge commit, not v2's commit.
    t.regex(
      last && 'image' in last ? String(last.image) : '',
      new RegExp(`^10\\.0\\.2\\.2:\\d+/devpivot/v2@${digest}$`),
    );
    const first = boots[0];
    t.regex(first && 'image' in first ? String(first.image) : '', /^fixture\.invalid\/fixture-coreos@sha256:/);
    t.not(last && 'commit' in last ? last.commit : '', '');
    const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
    t.true(console.some((line) => line.includes(`Pulling manifest: ostree-unverified-registry:`)));
    t.true(console.some((line) => /Staging deployment\.\.\.done/.test(line)));

    // The same reference again: rpm-ostree refused it ("Old and new refs are equal"), once, without a failure.
    const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
    t.is(skipped.length, 1);
    t.is(skipped[0] && 'reason' in skipped[0] ? skipped[0].reason : '', 'old and new refs are equal');
    const staged = run.events.filter((e) => e.kind === 'guest.pivot' && e.phase === 'staged');
    t.is(staged.length, 1, 'only the first rebase staged');
    t.is(run.events.filter((e) => e.kind === 'guest.failure').length, 0);
    t.deepEqual(leftoverDomains('old-to-new-rpm-ostree'), []);
  },
);
