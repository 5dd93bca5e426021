import { errorMark, errorSince, installErrorHandler, toLibvirtError } from './errors.js';
import type { CFn } from './ffi.js';

/** libvirt's convention: NULL or a negative number means failure. */
export function failedResult(result: unknown): boolean {
  return result === null || (typeof result === 'number' && result < 0);
}

let queue: Promise<unknown> = Promise.resolve();

/**
 * Run a libvirt call on a libuv worker thread (koffi `.async`) so the main thread stays free. Calls are
 * serialised: it keeps error attribution exact (see errors.ts) and leaves the rest of the libuv pool (4 threads,
 * one taken by the event loop) to fs and friends.
 */
export function callAsync<A extends unknown[], R>(
  operation: string,
  fn: CFn<A, R>,
  args: A,
  options: { uri?: string; failed?: (result: R) => boolean } = {},
): Promise<R> {
  installErrorHandler();
  const run = () =>
    new Promise<R>((resolve, reject) => {
      const mark = errorMark();
      fn.async(...args, (error: unknown, result: R) => {
        if (error) return reject(error);
        if ((options.failed ?? failedResult)(result))
          return reject(toLibvirtError(operation, errorSince(mark), options.uri));
        resolve(result);
      });
    });
  const next = queue.then(run, run);
  queue = next.catch(() => {});
  return next;
}

/** A call that only touches client-side state (names, handle frees, non-blocking stream I/O): main thread. */
export function callSync<A extends unknown[], R>(
  operation: string,
  fn: CFn<A, R>,
  args: A,
  options: { uri?: string; failed?: (result: R) => boolean } = {},
): R {
  installErrorHandler();
  const mark = errorMark();
  const result = fn(...args);
  if ((options.failed ?? failedResult)(result)) throw toLibvirtError(operation, errorSince(mark), options.uri);
  return result;
}
