/**
 * Every step kind, registered once. A step kind is one file of this folder (its type, label, schema, parse and
 * run); this map is the only list of them. A step type in `Step` without a definition here, or a definition here
 * without a type in `Step`, fails to compile.
 */
import { type AssertStep, assert } from './assert.js';
import type { StepDefinition } from './definition.js';
import { type DownStep, down } from './down.js';
import { type ExpectStep, expect } from './expect.js';
import { type FaultStep, fault } from './fault.js';
import { type FinalizeStep, finalize } from './finalize.js';
import { type PivotStep, pivot } from './pivot.js';
import { type PowerOffStep, powerOff } from './power-off.js';
import type { StepReader, StepSource } from './reader.js';
import { type RebootStep, reboot } from './reboot.js';
import { type RollbackStep, rollback } from './rollback.js';
import type { StepRuntime } from './runtime.js';
import { type SshStep, ssh } from './ssh.js';
import { type TagStep, tag } from './tag.js';
import { type UpStep, up } from './up.js';
import { type UpgradeStep, upgrade } from './upgrade.js';
import { type WaitStep, wait } from './wait.js';

/** A parsed step: one of the kinds of this folder. */
export type Step =
  | UpStep
  | ExpectStep
  | AssertStep
  | FaultStep
  | PowerOffStep
  | RebootStep
  | WaitStep
  | PivotStep
  | RollbackStep
  | TagStep
  | UpgradeStep
  | FinalizeStep
  | SshStep
  | DownStep;
export type StepKind = Step['kind'];
export type StepOf<K extends StepKind> = Extract<Step, { kind: K }>;

/** The map of every kind to its definition (its order is the order hints list the kinds in). */
export const STEPS: { readonly [K in StepKind]: StepDefinition<StepOf<K>> } = {
  up,
  expect,
  assert,
  fault,
  'power-off': powerOff,
  reboot,
  wait,
  pivot,
  rollback,
  tag,
  upgrade,
  finalize,
  ssh,
  down,
};

/** Every step kind, from the map. */
export const STEP_KINDS = Object.keys(STEPS) as StepKind[];

export function isStepKind(kind: string): kind is StepKind {
  return Object.hasOwn(STEPS, kind);
}

export function parseStep(kind: StepKind, source: StepSource, read: StepReader): Step {
  return STEPS[kind].parse(source, read);
}

export function runStep(step: Step, runtime: StepRuntime): Promise<void> {
  return run(step.kind, step, runtime);
}

/** The node whose failure the step waits for (fail fast spares it), if any. */
export function expectsFailureOn(step: Step): string | undefined {
  return expectsFailure(step.kind, step);
}

// One generic body per operation: indexing the map with a generic K keeps the kind and the step correlated.
function run<K extends StepKind>(kind: K, step: StepOf<K>, runtime: StepRuntime): Promise<void> {
  return STEPS[kind].run(step, runtime);
}

/** Whether the step reaches a node over ssh (its definition's `needsSsh`). */
export function stepNeedsSsh(step: Step): boolean {
  return STEPS[step.kind].needsSsh === true;
}

/** The nodes a step starts or needs (validation of the order of steps). */
export function nodesOf(step: Step): readonly string[] {
  return nodesOfKind(step.kind, step);
}

/** The least time a step takes (validation: the steps must fit the scenario's timeout). */
export function minimumMs(step: Step): number {
  return minimumOfKind(step.kind, step);
}

function nodesOfKind<K extends StepKind>(kind: K, step: StepOf<K>): readonly string[] {
  return STEPS[kind].nodesOf?.(step) ?? [];
}

function minimumOfKind<K extends StepKind>(kind: K, step: StepOf<K>): number {
  return STEPS[kind].minimumMs?.(step) ?? 0;
}

function expectsFailure<K extends StepKind>(kind: K, step: StepOf<K>): string | undefined {
  return STEPS[kind].expectsFailureOn?.(step);
}

export type { StepBase, StepDefinition, StepSchema } from './definition.js';
export { DEFAULT_WITHIN_MS } from './definition.js';
export type { Field, Fields, Position, StepReader, StepSource, YamlValue } from './reader.js';
export type { NodeLogEvent, RegistryControl, SshResult, StepRuntime } from './runtime.js';
export { SSH_FAILED, StepFailure } from './runtime.js';
