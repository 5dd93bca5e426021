/**
 * The conformance tests of conformance.test.ts, every one, against the registry with TLS and auth on: HTTPS whose
 * certificate the test's CA signed, HTTP Basic required on every request (helpers.ts useSecureClients).
 */
process.env.DEVPIVOT_CONFORMANCE_SECURE = '1';
await import('./conformance.test.js');
