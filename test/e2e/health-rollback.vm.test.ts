/**
 * scenarios/health-rollback.yaml. The good node's run carries the checks of old-to-new-rpm-ostree.vm.test.ts, which
 * booted the same v1 and made the same first-boot rebase to a native v2: legacy-booted v1 rebases to v2 by digest;
 * the same ref again is refused by rpm-ostree.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Stamped } from '../../src/core/events.js';
import { bootedVersions, consoleOf, leftoverDomains, runScenarioCli } from './run-scenario.js';

const kinds = (events: Stamped[], node: string) =>
  events
    .filter((e) => 'node' in e && e.node === node)
    .flatMap((e) => {
      switch (e.kind) {
        case 'guest.booted':
          return [`booted ${e.version}`];
        case 'guest.health':
          return [`health ${e.ok ? 'pass' : `fail ${e.check ?? '?'}`}`];
        case 'guest.fallback':
          return [`fallback ${e.tool}`];
        case 'vm.reboot':
          return ['reboot'];
        default:
          return [];
      }
    });

test('health-rollback: a bad update boots its 2 attempts, GRUB falls back to v1 and greenboot rolls back; a good one stays on v2 (legacy-booted v1 rebased to a native v2 by digest; the same ref again is refused)', async (t) => {
  t.timeout(50 * 60_000);
  const junit = join(mkdtempSync(join(tmpdir(), 'devpivot-health-')), 'junit.xml');
  const run = await runScenarioCli('health-rollback', { timeoutMs: 47 * 60_000, extraArgs: ['--junit', junit] });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  // bad: v1 (green), v2-bad twice (red, its check named, a reboot each), then v1 again (fallback, green).
  t.deepEqual(kinds(run.events, 'bad'), [
    'booted 1',
    'health pass',
    'reboot',
    'booted 2',
    'health fail 10_failing_check.sh',
    'reboot',
    'booted 2',
    'health fail 10_failing_check.sh',
    'reboot',
    'booted 1',
    'fallback rpm-ostree',
    'health pass',
  ]);
  t.deepEqual(kinds(run.events, 'good'), ['booted 1', 'health pass', 'reboot', 'booted 2', 'health pass']);
  t.deepEqual(bootedVersions(run.events, 'good'), ['1', '2']);
  // What greenboot and GRUB said, as they say it (their lines through the console drop-ins).
  const bad = consoleOf(run.events, 'bad').join('\n');
  for (const line of [
    'GRUB2 environment variables have been set for system upgrade. Max boot attempts is 2',
    "Script '10_failing_check.sh' FAILURE (exit code '1'). Continuing...",
    'Boot Status is RED - Health Check FAILURE!',
    'SYSTEM is UNHEALTHY. Rebooting...',
    'fixture-grub: boot attempts left: 1',
    'fixture-grub: boot attempts left: 0',
    'fixture-grub: boot counter ran out: entry 1',
    'Not on a bootc managed host, trying rpm-ostree rollback next.',
    'FALLBACK BOOT DETECTED! Default rpm-ostree deployment has been rolled back.',
  ])
    t.true(bad.includes(line), `bad's console lacks: ${line}`);
  t.is(run.events.filter((e) => e.kind === 'guest.failure').length, 0);

  // (old-to-new-rpm-ostree) good's steps after its v2 boot, each passed
  const goodSteps = run.steps.filter((step) => / good /.test(step));
  t.deepEqual(goodSteps, [
    '✓ expect good ignition within 10m',
    '✓ expect good pivot.pulling within 10m',
    '✓ expect good console /Importing: ostree-unverified-registry:\\S+ \\(digest: sha256:[0-9a-f]{64}\\)/ within 10m',
    '✓ expect good pivot.staged within 10m',
    '✓ expect good booted v2 within 10m',
    '✓ expect good health.pass within 5m',
    '✓ assert good booted v2 reboots=1 failed=false',
    "✓ ssh good 'sudo -n rpm-ostree status --json | jq -er '.deployments[]...' =~ /(^|\\n)sha256:[0-9a-f]{64}(\\n|$)/ within 3m",
    '✓ pivot good to v2',
    '✓ expect good pivot.skipped within 3m',
    "✓ ssh good 'test ! -e /run/ostree/staged-deployment && sudo -n rpm-os...' =~ /(^|\\n)0(\\n|$)/ within 3m",
    '✓ assert good booted v2 reboots=1 failed=false',
  ]);
  // The new boot names the image by its manifest digest, and its checksum is the merge commit, not v2's commit.
  const pushed = run.events.find((e) => e.kind === 'image.pushed' && /\/devpivot\/v2@/.test(e.ref));
  const digest = pushed && 'digest' in pushed ? pushed.digest : '';
  t.regex(digest, /^sha256:[0-9a-f]{64}$/);
  const goodBoots = run.events.filter((e) => e.kind === 'guest.booted' && e.node === 'good');
  const last = goodBoots.at(-1);
  t.regex(last && 'image' in last ? String(last.image) : '', new RegExp(`^10\\.0\\.2\\.2:\\d+/devpivot/v2@${digest}$`));
  const first = goodBoots[0];
  t.regex(first && 'image' in first ? String(first.image) : '', /^fixture\.invalid\/fixture-coreos@sha256:/);
  t.not(last && 'commit' in last ? last.commit : '', '');
  const good = consoleOf(run.events, 'good');
  t.true(good.some((line) => line.includes(`Pulling manifest: ostree-unverified-registry:`)));
  t.true(good.some((line) => /Staging deployment\.\.\.done/.test(line)));
  // The same reference again: rpm-ostree refused it ("Old and new refs are equal"), once, without a failure.
  const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
  t.deepEqual(
    skipped.map((e) => (e.kind === 'guest.pivot.skipped' ? `${e.node} ${e.reason}` : '')),
    ['good old and new refs are equal'],
  );
  const staged = run.events.filter((e) => e.kind === 'guest.pivot' && e.node === 'good' && e.phase === 'staged');
  t.is(staged.length, 1, 'only the first rebase staged');
  // The JUnit report names the failed check on the bad node's testcase.
  t.regex(readFileSync(junit, 'utf8'), /health check failed: 10_failing_check\.sh/);
  t.deepEqual(leftoverDomains('health-rollback'), []);
});
