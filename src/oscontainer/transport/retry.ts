/** When a failed request is worth another attempt, and how long to wait before it. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DevpivotError } from '../../core/errors.js';

/** A registry that is briefly away (restart, network blip) may answer the next attempt; other errors will not. */
export function isTransient(error: unknown): boolean {
  return (error as DevpivotError).code === 'REGISTRY_UNREACHABLE';
}

/** Exponential backoff before attempt `attempt` (1, 2, ...): 200 ms doubling, at most 2 s; aborts with `signal`. */
export function backoff(attempt: number, signal: AbortSignal | undefined): Promise<void> {
  return sleep(Math.min(100 * 2 ** attempt, 2000), undefined, { signal });
}
