import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

/**
 * tls-wrong-ca: the registry serves HTTPS only; the node was given another CA than the one that signed its
 * certificate, and fails with Go's x509 error (skopeo under the rpm-ostree stand-in), classified as a pull failure
 * with that cause. No request of the node reached the registry's handler (the handshake failed first).
 */
test('tls-wrong-ca: a node given another CA fails on x509, classified as a TLS pull failure', async (t) => {
  const run = await runScenarioCli('tls-wrong-ca');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  const listening = run.events.find((e) => e.kind === 'registry.listening');
  t.regex(listening && 'url' in listening ? listening.url : '', /^https:\/\//);
  t.deepEqual(bootedVersions(run.events, 'wrong-ca'), ['1']);
  const failures = run.events.flatMap((e) => (e.kind === 'guest.failure' ? [e.reason] : []));
  t.is(failures.length, 1, JSON.stringify(failures));
  t.regex(failures[0]!, /^pull failed: TLS \(x509: certificate signed by unknown authority\): update tool error: /);
  t.regex(failures[0]!, /Get "https:\/\/10\.0\.2\.2:\d+\/v2\/"/, 'the guest spoke HTTPS to its port');
  t.log(`guest failure: ${failures[0]}`);
  const served = run.events.filter((e) => e.kind === 'registry.request' && 'node' in e && e.node === 'wrong-ca');
  t.deepEqual(served, [], 'no request of wrong-ca got past the TLS handshake');
  t.deepEqual(leftoverDomains('tls-wrong-ca'), []);
});
