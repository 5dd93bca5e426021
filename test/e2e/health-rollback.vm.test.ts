import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Stamped } from '../../src/core/events.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

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

const consoleOf = (events: Stamped[], node: string) =>
  events.flatMap((e) => (e.kind === 'vm.console' && e.node === node ? [e.line] : []));

test('health-rollback: a bad update boots its 2 attempts, GRUB falls back to v1 and greenboot rolls back; a good one stays on v2', async (t) => {
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
  // The JUnit report names the failed check on the bad node's testcase.
  t.regex(readFileSync(junit, 'utf8'), /health check failed: 10_failing_check\.sh/);
  t.deepEqual(leftoverDomains('health-rollback'), []);
});
