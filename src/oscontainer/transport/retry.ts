/** When a failed request is worth another attempt, and how long to wait before it. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DevpivotError } from '../../core/errors.js';
import { RegistryResponseError } from './errors.js';

/** Attempts of one idempotent request (GET, HEAD) unless the caller says otherwise. */
export const REQUEST_ATTEMPTS = 4;

/**
 * A registry that is briefly away (restart, network blip) or overloaded (a 5xx, 429 Too Many Requests) may answer
 * the next attempt; other errors (404, 401, a bad digest) will not.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof RegistryResponseError) return error.status >= 500 || error.status === 429;
  return (error as DevpivotError).code === 'REGISTRY_UNREACHABLE';
}

/** Exponential backoff before attempt `attempt` (1, 2, ...): 200 ms doubling, at most 2 s; aborts with `signal`. */
export function backoff(attempt: number, signal: AbortSignal | undefined): Promise<void> {
  return sleep(Math.min(100 * 2 ** attempt, 2000), undefined, { signal });
}
