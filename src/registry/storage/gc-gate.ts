import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Makes gc and writes of one store agree inside a process: writes (blob puts, links, manifests) run together,
 * gc runs alone. gc waits for the writes in flight and new writes wait for gc, so a manifest is either in gc's
 * mark (written before) or checks its blobs after the sweep (written after) — never validated against a blob the
 * sweep then removes. One gate per storage directory, shared by every store object opened on it.
 */
export class GcGate {
  private writes = 0;
  private collecting: Promise<void> | undefined;
  private idle: (() => void) | undefined;

  private static readonly inside = new AsyncLocalStorage<GcGate>();
  private static readonly gates = new Map<string, GcGate>();

  static of(root: string): GcGate {
    let gate = GcGate.gates.get(root);
    if (gate) return gate;
    gate = new GcGate();
    GcGate.gates.set(root, gate);
    return gate;
  }

  /** Run a write; nested writes (a manifest put linking its blobs) join the outer one. */
  async write<T>(work: () => Promise<T>): Promise<T> {
    if (GcGate.inside.getStore() === this) return work();
    while (this.collecting) await this.collecting;
    this.writes++;
    try {
      return await GcGate.inside.run(this, work);
    } finally {
      this.writes--;
      if (this.writes === 0) this.idle?.();
    }
  }

  async collect<T>(work: () => Promise<T>): Promise<T> {
    while (this.collecting) await this.collecting;
    let release!: () => void;
    this.collecting = new Promise((resolve) => {
      release = resolve;
    });
    try {
      if (this.writes > 0) await new Promise<void>((resolve) => (this.idle = resolve));
      this.idle = undefined;
      return await work();
    } finally {
      this.collecting = undefined;
      release();
    }
  }
}
