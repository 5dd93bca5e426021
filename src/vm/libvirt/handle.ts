import type { Ptr } from './ffi.js';

/**
 * Ownership of one libvirt handle: `free()` releases it exactly once. A handle that is garbage-collected without
 * being freed is released by the finalizer (a safety net: code paths free explicitly).
 */
const finalizer = new FinalizationRegistry<() => void>((release) => {
  try {
    release();
  } catch {}
});

export class Handle {
  #ptr: Ptr | undefined;
  readonly #release: (ptr: Ptr) => void;

  constructor(ptr: Ptr, release: (ptr: Ptr) => void) {
    this.#ptr = ptr;
    this.#release = release;
    finalizer.register(this, () => release(ptr), this);
  }

  get ptr(): Ptr {
    if (this.#ptr === undefined) throw new Error('libvirt handle used after free');
    return this.#ptr;
  }

  get freed(): boolean {
    return this.#ptr === undefined;
  }

  /** Take the pointer out without releasing it: the caller releases it (e.g. on a worker thread). */
  detach(): Ptr {
    const ptr = this.ptr;
    this.#ptr = undefined;
    finalizer.unregister(this);
    return ptr;
  }

  free(): void {
    if (this.#ptr === undefined) return;
    const ptr = this.#ptr;
    this.#ptr = undefined;
    finalizer.unregister(this);
    this.#release(ptr);
  }
}
