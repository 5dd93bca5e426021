import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

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
  t.deepEqual(leftoverDomains('corrupt-oscontainer'), []);
});
