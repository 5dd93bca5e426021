/** The registry's CA and certificate (registry/tls.ts): what they are valid for, how the keys are kept. */
import { X509Certificate } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { makeCa, registryTls } from '../../src/registry/tls.js';
import { tempDir } from './helpers.js';

test('a CA and a server certificate for 127.0.0.1, 10.0.2.2 and localhost; keys 0600 under private/, reused', async (t) => {
  const dir = await tempDir('devpivot-tls-');
  try {
    const tls = await registryTls(dir);
    const ca = new X509Certificate(tls.caPem);
    const server = new X509Certificate(tls.certPem);
    t.true(ca.ca);
    t.false(server.ca);
    t.true(server.verify(ca.publicKey), 'the CA signed the server certificate');
    t.true(server.checkIssued(ca));
    t.is(server.subjectAltName, 'IP Address:127.0.0.1, IP Address:10.0.2.2, DNS:localhost');
    t.is(server.checkIP('10.0.2.2'), '10.0.2.2');
    t.is(server.checkHost('localhost'), 'localhost');
    t.deepEqual((await readdir(dir)).sort(), ['ca.crt', 'private'], 'DIR is a --cert-dir: only ca.crt at the top');
    t.is((await stat(join(dir, 'private'))).mode & 0o777, 0o700);
    for (const key of ['ca.key', 'server.key']) t.is((await stat(join(dir, 'private', key))).mode & 0o777, 0o600);
    const again = await registryTls(dir);
    t.is(again.caPem, tls.caPem, 'an existing CA is kept');
    const other = new X509Certificate(
      await import('node:fs/promises').then((fs) =>
        makeCa(join(dir, '..', `${dir.split('/').pop()}-o`)).then((f) => fs.readFile(f, 'utf8')),
      ),
    );
    t.false(server.verify(other.publicKey), 'another CA did not sign it');
    await rm(join(dir, '..', `${dir.split('/').pop()}-o`), { recursive: true, force: true });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
