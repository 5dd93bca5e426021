import type { RunResult } from '../engine/engine.js';
import type { Reporter } from './reporter.js';

/**
 * How one run is shown: reporters fed by the bus (plain lines, NDJSON, JUnit), or an interactive view (the Ink
 * TUI) that also takes part in the run's control: it can stop the run and decide whether the VMs are kept.
 */
export interface Presenter {
  reporters: Reporter[];
  /** For the TUI: asked at cleanup whether to keep the VMs (its `k` key). */
  keep?: () => boolean;
  /** An abort signal of its own (the TUI's `q`), combined with Ctrl-C. */
  signal?: AbortSignal;
  /** After the run and the reporters' onEnd: e.g. let the view show the summary, then unmount it. */
  finish?(result: RunResult): Promise<void>;
}
