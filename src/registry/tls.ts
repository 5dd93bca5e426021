/**
 * The embedded registry's TLS material: a CA of its own and a server certificate it signs for the addresses
 * clients use (127.0.0.1 on this host, 10.0.2.2 from user-mode guests, localhost). Made with the `openssl` CLI:
 * node:crypto makes keys but cannot issue X.509 certificates, and openssl is on every host that runs the tools
 * devpivot drives (a host package, scripts/setup-plan.mjs), so no certificate library is added.
 *
 * Layout: `DIR/ca.crt` alone at the top, so DIR is what skopeo/podman `--cert-dir` and certs.d take (there a
 * `*.key` names a client certificate); the keys (0600), the server certificate and openssl's serial file are
 * under `DIR/private/` (0700).
 */
import { execFile } from 'node:child_process';
import { access, chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DevpivotError } from '../core/errors.js';

/** The names the server certificate is valid for (subjectAltName): what skopeo, podman, curl and guests dial. */
export const SERVER_NAMES = { ip: ['127.0.0.1', '10.0.2.2'], dns: ['localhost'] } as const;

export interface RegistryTls {
  /** The CA certificate (PEM) clients are told to trust. */
  caPem: string;
  /** Its path: what `--cert-dir`/`--cacert`/certs.d are pointed at. */
  caFile: string;
  certPem: string;
  keyPem: string;
}

const DAYS = '825';

function openssl(args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, { cwd }, (error, _stdout, stderr) => {
      if (!error) return resolve();
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      reject(
        missing
          ? new DevpivotError('TOOL_MISSING', 'openssl is not installed: it makes the registry TLS certificates', {
              cause: error,
            })
          : new DevpivotError('REGISTRY_TLS', `openssl ${args[0]} failed: ${stderr.trim() || error.message}`, {
              cause: error,
            }),
      );
    });
  });
}

async function newKey(dir: string, file: string): Promise<void> {
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file], dir);
  await chmod(join(dir, file), 0o600);
}

/** Make a CA in `dir`: `ca.crt`, its key in `private/ca.key` (0600). Returns the certificate's path. */
export async function makeCa(dir: string, subject = 'devpivot registry CA'): Promise<string> {
  await mkdir(join(dir, 'private'), { recursive: true, mode: 0o700 });
  await newKey(dir, 'private/ca.key');
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      'private/ca.key',
      '-subj',
      `/CN=${subject}`,
      '-days',
      DAYS,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      'ca.crt',
    ],
    dir,
  );
  return join(dir, 'ca.crt');
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/**
 * The registry's CA and server certificate in `dir`, made when missing and reused when there (a `registry serve`
 * restarted keeps the CA its clients were told).
 */
export async function registryTls(dir: string): Promise<RegistryTls> {
  const files = ['ca.crt', 'private/server.key', 'private/server.crt'].map((f) => join(dir, f));
  if (!(await Promise.all(files.map(exists))).every(Boolean)) {
    await makeCa(dir);
    await newKey(dir, 'private/server.key');
    const csr = ['-new', '-key', 'private/server.key', '-subj', '/CN=devpivot registry', '-out', 'private/server.csr'];
    await openssl(['req', ...csr], dir);
    const san = [...SERVER_NAMES.ip.map((ip) => `IP:${ip}`), ...SERVER_NAMES.dns.map((d) => `DNS:${d}`)].join(',');
    await writeFile(
      join(dir, 'private', 'server.ext'),
      `subjectAltName=${san}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n`,
    );
    await openssl(
      [
        'x509',
        '-req',
        '-in',
        'private/server.csr',
        '-CA',
        'ca.crt',
        '-CAkey',
        'private/ca.key',
        '-CAserial',
        'private/ca.srl',
        '-CAcreateserial',
        '-days',
        DAYS,
        '-extfile',
        'private/server.ext',
        '-out',
        'private/server.crt',
      ],
      dir,
    );
  }
  const [caPem, keyPem, certPem] = await Promise.all(files.map((f) => readFile(f, 'utf8')));
  return { caPem: caPem!, caFile: files[0]!, keyPem: keyPem!, certPem: certPem! };
}
