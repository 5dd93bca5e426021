import { isDigest, isSha256Digest } from '../oci/digest.js';
import { digestInvalid } from './errors.js';

/** Validate a client-supplied digest: malformed or non-sha256 digests are DIGEST_INVALID (400). */
export function parseDigest(value: string | null | undefined): string {
  if (!value) throw digestInvalid('digest missing');
  if (isSha256Digest(value)) return value;
  if (!isDigest(value)) throw digestInvalid(`malformed digest '${value}'`, { digest: value });
  if (value.startsWith('sha256:'))
    throw digestInvalid(`sha256 digest must be 64 lowercase hex characters`, { digest: value });
  throw digestInvalid(`unsupported digest algorithm in '${value}' (only sha256 is stored)`, { digest: value });
}
