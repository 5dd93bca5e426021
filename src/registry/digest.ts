import { createHash, type Hash } from 'node:crypto';
import { digestInvalid } from './errors.js';

/** The only algorithm we store content under (image-spec "Digests": sha256 is the one registries must support). */
export const SHA256_RE = /^sha256:[a-f0-9]{64}$/;
/** The general digest grammar (image-spec "Digests"), used to tell "malformed" from "unsupported algorithm". */
const DIGEST_GRAMMAR = /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;

export function isDigest(value: string): boolean {
  return DIGEST_GRAMMAR.test(value);
}

/** Validate a client-supplied digest: malformed or non-sha256 digests are DIGEST_INVALID (400). */
export function parseDigest(value: string | null | undefined): string {
  if (!value) throw digestInvalid('digest missing');
  if (SHA256_RE.test(value)) return value;
  if (!DIGEST_GRAMMAR.test(value)) throw digestInvalid(`malformed digest '${value}'`, { digest: value });
  if (value.startsWith('sha256:'))
    throw digestInvalid(`sha256 digest must be 64 lowercase hex characters`, { digest: value });
  throw digestInvalid(`unsupported digest algorithm in '${value}' (only sha256 is stored)`, { digest: value });
}

export function sha256(): Hash {
  return createHash('sha256');
}

export function digestOf(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

export function hexOf(digest: string): string {
  return digest.slice('sha256:'.length);
}
