import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

/**
 * pull-secret: the registry requires credentials (and serves TLS). The node given its pull secret in
 * /var/lib/kubelet/config.json pivots; the node given none gets podman's 401, and pivot gives up after its retries:
 * a pull failure, credentials refused.
 */
test('pull-secret: the node with the secret pivots, the one without fails with the 401', async (t) => {
  const run = await runScenarioCli('pull-secret');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events, 'with-secret'), ['1', '2']);
  t.deepEqual(bootedVersions(run.events, 'no-secret'), ['1']);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [{ node: e.node, reason: e.reason }] : []));
  t.is(failures.length, 1, JSON.stringify(failures));
  t.is(failures[0]!.node, 'no-secret');
  t.regex(failures[0]!.reason, /^pull failed: registry credentials refused \(/);
  t.regex(failures[0]!.reason, /authentication required|unauthorized/i);
  t.log(`guest failure: ${failures[0]!.reason}`);
  // The registry answered no-secret's requests 401 and served with-secret's.
  const status = (node: string) =>
    run.events.flatMap((e) => (e.kind === 'registry.request' && 'node' in e && e.node === node ? [e.status] : []));
  t.true(status('no-secret').includes(401));
  t.false(
    status('no-secret').some((s) => s === 200 || s === 206),
    'nothing was served without credentials',
  );
  t.true(status('with-secret').includes(200));
  t.deepEqual(leftoverDomains('pull-secret'), []);
});
