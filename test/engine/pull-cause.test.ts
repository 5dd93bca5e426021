/** A pull refused for TLS or credentials is classified so, quoting the client (engine/pull-cause.ts). */
import test from 'ava';
import { classify, initialState } from '../../src/engine/classifier.js';
import { pullCause } from '../../src/engine/pull-cause.js';

const line = (text: string) => ({ kind: 'vm.console' as const, node: 'n', line: text });

test('Go x509 and curl TLS errors are TLS causes; 401 answers are credential causes', (t) => {
  t.deepEqual(
    pullCause(
      'error: Creating importer: Fetching manifest: pinging container registry 10.0.2.2:4000: Get "https://10.0.2.2:4000/v2/": x509: certificate signed by unknown authority',
    ),
    { kind: 'tls', detail: 'x509: certificate signed by unknown authority' },
  );
  t.deepEqual(
    pullCause('Get "https://h/v2/": tls: failed to verify certificate: x509: certificate is valid for a, not b'),
    {
      kind: 'tls',
      detail: 'tls: failed to verify certificate: x509: certificate is valid for a, not b',
    },
  );
  t.deepEqual(pullCause('curl: (60) SSL certificate problem: unable to get local issuer certificate'), {
    kind: 'tls',
    detail: 'SSL certificate problem: unable to get local issuer certificate',
  });
  t.deepEqual(
    pullCause('Error: reading manifest sha256:ab in 10.0.2.2:4000/devpivot/os: unauthorized: authentication required'),
    {
      kind: 'auth',
      detail: 'unauthorized: authentication required',
    },
  );
  t.is(pullCause('Error: manifest unknown'), undefined);
  t.is(pullCause('error: Digest did not match'), undefined);
});

test("skopeo 1.9's bare 'unauthorized' for an anonymous manifest fetch is a credential cause", (t) => {
  // printed by this host's skopeo 1.9 (`skopeo inspect --no-creds`) against `devpivot registry serve --tls --auth`
  const text =
    'error: Creating importer: Fetching manifest: Error parsing image name "docker://10.0.2.2:45415/devpivot/native@sha256:5e02": reading manifest sha256:5e02 in 10.0.2.2:45415/devpivot/native: unauthorized';
  t.deepEqual(pullCause(text), { kind: 'auth', detail: 'unauthorized' });
  // a word in a name is not a cause
  t.is(pullCause('reading manifest in 10.0.2.2:1/unauthorized-images/os: manifest unknown'), undefined);
});

test('the classifier puts the cause first; a fatal line gets it from the retried error before it', (t) => {
  let state = initialState;
  state = classify(
    state,
    line('rpm-ostree[812]: Pulling manifest: ostree-unverified-registry:10.0.2.2:4000/os@sha256:aa'),
  ).state;
  const tls = classify(
    state,
    line(
      'rpm-ostree[812]: error: Creating importer: Fetching manifest: Get "https://10.0.2.2:4000/v2/": x509: certificate signed by unknown authority',
    ),
  ).events.find((e) => e.kind === 'guest.failure');
  t.regex(
    tls && 'reason' in tls ? tls.reason : '',
    /^pull failed: TLS \(x509: certificate signed by unknown authority\): update tool error: /,
  );

  let pivot = initialState;
  pivot = classify(
    pivot,
    line(
      'pivot[700]: Error: reading manifest sha256:ab in 10.0.2.2:4000/devpivot/os: unauthorized: authentication required',
    ),
  ).state;
  const fatal = classify(
    pivot,
    line('pivot[700]: F1203 08:10:00.000000     700 run.go:48] podman: timed out waiting for the condition'),
  ).events.find((e) => e.kind === 'guest.failure');
  t.regex(
    fatal && 'reason' in fatal ? fatal.reason : '',
    /^pull failed: registry credentials refused \(unauthorized: authentication required\): fatal error: /,
  );

  const other = classify(initialState, line('Kernel panic - not syncing: VFS')).events.find(
    (e) => e.kind === 'guest.failure',
  );
  t.regex(other && 'reason' in other ? other.reason : '', /^kernel panic: /);
});
