/**
 * The embedded registry's TLS material: a CA of its own and a server certificate it signs for the addresses
 * clients use (127.0.0.1 on this host, 10.0.2.2 from user-mode guests, localhost). Made with the `openssl` CLI:
 * node:crypto makes keys but cannot issue X.509 certificates, and openssl is on every host that runs the tools
 * devpivot drives (a host package, scripts/setup-plan.mjs), so no certificate library is added. Keys are written
 * mode 0600 in a directory of mode 0700; certificates 0644.
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

/** Make a CA (key + self-signed certificate) named `name` in `dir`: `NAME.key` (0600), `NAME.crt`. */
export async function makeCa(dir: string, name = 'ca', subject = 'devpivot registry CA'): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`], dir);
  await chmod(join(dir, `${name}.key`), 0o600);
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      `${name}.key`,
      '-subj',
      `/CN=${subject}`,
      '-days',
      DAYS,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-out',
      `${name}.crt`,
    ],
    dir,
  );
  return join(dir, `${name}.crt`);
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
  const files = ['ca.crt', 'server.key', 'server.crt'].map((f) => join(dir, f));
  if (!(await Promise.all(files.map(exists))).every(Boolean)) {
    await makeCa(dir);
    await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'server.key'], dir);
    await chmod(join(dir, 'server.key'), 0o600);
    await openssl(['req', '-new', '-key', 'server.key', '-subj', '/CN=devpivot registry', '-out', 'server.csr'], dir);
    const san = [...SERVER_NAMES.ip.map((ip) => `IP:${ip}`), ...SERVER_NAMES.dns.map((d) => `DNS:${d}`)].join(',');
    await writeFile(
      join(dir, 'server.ext'),
      `subjectAltName=${san}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n`,
    );
    await openssl(
      [
        'x509',
        '-req',
        '-in',
        'server.csr',
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        DAYS,
        '-extfile',
        'server.ext',
        '-out',
        'server.crt',
      ],
      dir,
    );
  }
  const [caPem, keyPem, certPem] = await Promise.all(files.map((f) => readFile(f, 'utf8')));
  return { caPem: caPem!, caFile: files[0]!, keyPem: keyPem!, certPem: certPem! };
}
