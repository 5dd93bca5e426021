import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

/**
 * tls-wrong-ca: HTTPS end to end. The node given the registry's CA (certs.d, through Ignition) rebases over TLS;
 * the node given another CA fails with Go's x509 error, classified as a pull failure with that cause.
 */
test('tls-wrong-ca: the trusted node pivots over HTTPS, the one with another CA fails on x509', async (t) => {
  const run = await runScenarioCli('tls-wrong-ca');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  const listening = run.events.find((e) => e.kind === 'registry.listening');
  t.regex(listening && 'url' in listening ? listening.url : '', /^https:\/\//);
  t.deepEqual(bootedVersions(run.events, 'trusted').length, 2, 'trusted booted v1, then v2');
  t.deepEqual(bootedVersions(run.events, 'wrong-ca'), ['1']);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [{ node: e.node, reason: e.reason }] : []));
  t.is(failures.length, 1, JSON.stringify(failures));
  t.is(failures[0]!.node, 'wrong-ca');
  t.regex(failures[0]!.reason, /^pull failed: TLS \(x509: certificate signed by unknown authority\): /);
  t.log(`guest failure: ${failures[0]!.reason}`);
  // Every guest request reached the registry over TLS: the wrong-CA node's never completed a handshake, so none of
  // its requests reached the handler; the trusted node's pulls all came through its own port.
  const requests = run.events.filter((e) => e.kind === 'registry.request' && 'node' in e);
  t.false(
    requests.some((e) => 'node' in e && e.node === 'wrong-ca'),
    'no request of wrong-ca was served',
  );
  t.true(requests.some((e) => 'node' in e && e.node === 'trusted'));
  t.deepEqual(leftoverDomains('tls-wrong-ca'), []);
});
