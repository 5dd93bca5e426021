import type { Stamped } from '../core/events.js';
import type { RunResult } from '../engine/engine.js';
import type { Scenario } from '../scenario/types.js';

/** A reporter: optional hooks (as vitest's), fed by the bus while the engine runs, then the final result. */
export interface Reporter {
  onEvent?(event: Stamped): void;
  onEnd?(result: RunResult, scenario: Scenario): void | Promise<void>;
}

/** Remove what cannot go into a terminal line or an XML document: control characters except tab. */
export function printable(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
}
