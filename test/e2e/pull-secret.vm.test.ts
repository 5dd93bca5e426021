import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

/**
 * pull-secret: the registry serves HTTPS and requires credentials. The legacy node, given its pull secret in
 * /var/lib/kubelet/config.json and the CA in certs.d, pivots; the rpm-ostree node given no secret pulls anonymously
 * (ostree-ext without /etc/ostree/auth.json) and its 401 is classified as a pull failure, credentials refused.
 */
test('pull-secret: the node with the secret pivots over HTTPS, the one without fails with the 401', async (t) => {
  t.timeout(25 * 60_000); // two nodes under TCG; the refused one retries its pull before it gives up
  const run = await runScenarioCli('pull-secret', { timeoutMs: 24 * 60_000 });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  const listening = run.events.find((e) => e.kind === 'registry.listening');
  t.regex(listening && 'url' in listening ? listening.url : '', /^https:\/\//);
  t.deepEqual(bootedVersions(run.events, 'with-secret'), ['1', '2']);
  t.deepEqual(bootedVersions(run.events, 'no-secret'), ['1']);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [{ node: e.node, reason: e.reason }] : []));
  t.is(failures.length, 1, JSON.stringify(failures));
  t.is(failures[0]!.node, 'no-secret');
  t.regex(
    failures[0]!.reason,
    /^pull failed: registry credentials refused \(unauthorized(: authentication required)?\)/,
  );
  t.log(`guest failure: ${failures[0]!.reason}`);
  // The registry answered every request of no-secret 401 and served with-secret's blobs with its credentials.
  const statuses = (node: string) =>
    run.events.flatMap((e) => (e.kind === 'registry.request' && 'node' in e && e.node === node ? [e.status] : []));
  t.true(statuses('no-secret').length > 0);
  t.true(
    statuses('no-secret').every((s) => s === 401),
    JSON.stringify(statuses('no-secret')),
  );
  t.true(statuses('with-secret').includes(200));
  t.deepEqual(leftoverDomains('pull-secret'), []);
});
