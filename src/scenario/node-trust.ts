/**
 * A node's own deviation from the registry's trust (docs/PROTOCOLS.md "Trust"): `registry-ca: other` gives it a CA
 * that did not sign the registry's certificate (the guest's TLS client must refuse), `pull-secret: false` gives it
 * no pull secret (the guest's pull must be answered 401). Each needs the registry feature it takes away.
 */
import type { Node } from 'yaml';
import type { DocumentReader, MappingFields } from './reader.js';
import type { RegistrySpec } from './types.js';

export const NODE_TRUST_KEYS = ['registry-ca', 'pull-secret'];

export function readNodeTrust(
  r: DocumentReader,
  f: MappingFields,
  what: string,
  registry: RegistrySpec | undefined,
): { registryCa?: 'other'; pullSecret?: false } {
  const out: { registryCa?: 'other'; pullSecret?: false } = {};
  const embedded = registry?.kind === 'embedded' ? registry : undefined;
  const ca = f.get('registry-ca');
  if (ca)
    r.guard(() => {
      r.oneOf(ca.value as Node | null, `${what} registry-ca`, ['other']);
      if (registry && !embedded?.tls)
        r.fail(ca.key as Node, `${what} registry-ca needs registry: { tls: true }`, 'add tls: true under registry');
      out.registryCa = 'other';
    });
  const secret = f.get('pull-secret');
  if (secret)
    r.guard(() => {
      const given = r.boolean(secret.value as Node | null, `${what} pull-secret`);
      if (registry && !embedded?.auth)
        r.fail(
          secret.key as Node,
          `${what} pull-secret needs registry: { auth: true }`,
          'add auth: true under registry',
        );
      if (!given) out.pullSecret = false;
    });
  return out;
}
