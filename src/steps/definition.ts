/**
 * The shape every step kind has: one file under `src/steps/` per kind exports its step type, a constructor that
 * gives the step its label, and a StepDefinition; `index.ts` registers them in one exhaustive map.
 */
import type { Position, StepReader, StepSource } from './reader.js';
import type { StepRuntime } from './runtime.js';

/** What every parsed step carries besides its own fields. */
export interface StepBase {
  readonly kind: string;
  pos: Position;
  /** One line for humans, e.g. `expect node1 booted new within 10m`: the step's name in events and reports. */
  label: string;
}

/** How long `expect` (and `power-off: { when }`) waits when the scenario does not say `within:`. */
export const DEFAULT_WITHIN_MS = 5 * 60_000;

export interface StepSchema {
  /** The keys its mapping form accepts; the first ones are the usual ones. */
  readonly keys: readonly string[];
  /** The keys its mapping form must have. */
  readonly required: readonly string[];
  /**
   * How it relates to the nodes it names (`nodesOf`): `up` starts them (each must not be up already), `down`
   * removes every node, a step that `needs-running` nodes must come after an `up` of each of them and before the
   * next `down`. Checked when the scenario is read: such a step could never be satisfied.
   */
  readonly nodes: 'starts' | 'removes' | 'needs-running' | 'any';
}

export interface StepDefinition<S extends StepBase> {
  readonly schema: StepSchema;
  /** Read the step from the document; issues go through `read` (with their positions). */
  parse(source: StepSource, read: StepReader): S;
  /** Do it; a step that does not hold rejects (a StepFailure, or the runtime's own errors). */
  run(step: S, runtime: StepRuntime): Promise<void>;
  /**
   * The node whose `guest.failure` this step waits for: fail fast (before the step and while it waits) spares that
   * node's failures. Steps without it fail at once when any node fails.
   */
  expectsFailureOn?(step: S): string | undefined;
  /** The nodes the step starts or needs (see `schema.nodes`); none when absent. */
  nodesOf?(step: S): readonly string[];
  /** The least time the step takes however the guests behave (a `wait`): all of them must fit the timeout. */
  minimumMs?(step: S): number;
  /** The step reaches a node over ssh: the run then makes the session's key and each node's ssh forward. */
  readonly needsSsh?: boolean;
}
