/** Content digests (image-spec "Digests"). Everything we compute and store is sha256. */
import { createHash, type Hash } from 'node:crypto';

/** A sha256 digest as registries must support it: 64 lowercase hex characters. */
export const SHA256_RE = /^sha256:[a-f0-9]{64}$/;
/** The general grammar `algorithm:encoded`, to tell "malformed" from "unsupported algorithm". */
const DIGEST_GRAMMAR = /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;

/** Matches the digest grammar (any algorithm). */
export function isDigest(value: string): boolean {
  return DIGEST_GRAMMAR.test(value);
}

export function isSha256Digest(value: string): boolean {
  return SHA256_RE.test(value);
}

/** A fresh sha256 hash, for digests computed while streaming; finish it with `digestOfHash`. */
export function sha256Hash(): Hash {
  return createHash('sha256');
}

export function digestOfHash(hash: Hash): string {
  return `sha256:${hash.digest('hex')}`;
}

export function digestOf(data: string | Uint8Array): string {
  return digestOfHash(sha256Hash().update(data));
}

/** The hex part of a sha256 digest (how the storage names files). */
export function hexOf(digest: string): string {
  return digest.slice('sha256:'.length);
}
