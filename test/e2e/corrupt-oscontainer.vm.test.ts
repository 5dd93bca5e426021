import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

/** A glog line of pivot (openshift/pivot's `Lmmdd hh:mm:ss.uuuuuu pid file:line] text`) as the console shows it. */
const glog = (level: string, file: string, text: string) =>
  new RegExp(`pivot\\[\\d+\\]: ${level}\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} +\\d+ ${file}\\] ${text}`);

test('corrupt-oscontainer: the corrupted pull is refused and reported, the node stays on v1', async (t) => {
  const run = await runScenarioCli('corrupt-oscontainer');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1']);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [e.reason] : []));
  t.is(failures.length, 1);
  t.false(run.events.some((e) => e.kind === 'guest.pivot' && e.phase === 'staged'));
  // The fault proves itself: the registry served a layer with altered content, and the guest refused it for
  // exactly that reason (its pull's digest check), not for any other.
  const corrupted = run.events.filter(
    (e): e is Stamped<EventOf<'registry.request'>> => e.kind === 'registry.request' && e.corrupted === true,
  );
  t.true(corrupted.length >= 1, 'a layer was served corrupted');
  t.regex(failures[0]!, /digest did not match|digest mismatch|does not match|sha256 mismatch/i, failures[0]);
  t.log(`guest failure: ${failures[0]}`);
  // In the guest: podman's pull fails the digest check, pivot retries it (k8s wait.ExponentialBackoff: 5 s, then
  // 10, 20, 40, 80 before its fatal error) and never gets to pivoting or staging.
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  const error = console.findIndex((line) => /pivot\[\d+\]: Error: .*Digest did not match/.test(line));
  t.true(error >= 0, 'podman reports the digest mismatch');
  const after = console.slice(error + 1);
  t.true(
    after.some((line) => glog('W', 'run.go:40', 'podman failed: exit status 125; retrying\\.\\.\\.$').test(line)),
    'pivot retries the failed pull',
  );
  t.true(
    after.some((line) => glog('I', 'run.go:16', 'Running: podman pull').test(line)),
    'the pull runs again after the error',
  );
  t.false(console.some((line) => /Pivoting to|Staging deployment/.test(line)));
  t.deepEqual(leftoverDomains('corrupt-oscontainer'), []);
});
