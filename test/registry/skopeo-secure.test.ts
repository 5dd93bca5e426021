/**
 * The real-skopeo tests of skopeo.test.ts, every one, against the registry with TLS and auth on: skopeo is told the
 * test's CA (--cert-dir) and pull secret (--authfile) instead of --tls-verify=false.
 */
process.env.DEVPIVOT_SKOPEO_SECURE = '1';
await import('./skopeo.test.js');
