import type { PivotPhase } from '../core/events.js';
import type { PivotDriver } from '../ignition/fragments.js';

/** A position in a scenario file (1-based), for error messages and step labels. */
export interface Position {
  line: number;
  col: number;
}

export type ImageSource =
  | { kind: 'fixture'; version: string }
  | { kind: 'path'; path: string; sha256?: string }
  | { kind: 'url'; url: string; sha256: string };

export type OscontainerSource =
  | { kind: 'build-fixture'; version: string }
  | { kind: 'build-ostree'; repo: string; commit: string }
  | { kind: 'build-rootfs'; rootfs: string; version?: string }
  | { kind: 'pull'; ref: string };

export type RegistrySpec = { kind: 'embedded' } | { kind: 'external'; url: string };

export interface NodeDef {
  name: string;
  /** Key into Scenario.images. */
  image: string;
  memoryMiB: number;
  vcpus: number;
  firmware: 'bios' | 'uefi';
  driver: PivotDriver;
  /** Key into Scenario.oscontainers; undefined = the node boots and stays where it is. */
  pivot?: string;
  kernelArgs: { add: string[]; delete: string[] };
  /** An Ignition config fragment merged into the generated one. */
  ignition?: Record<string, unknown>;
  pos: Position;
}

/** What an `expect` step waits for. */
export type ExpectEvent =
  | 'ignition'
  | 'pivot.pulling'
  | 'pivot.staging'
  | 'pivot.staged'
  | 'pivot.rebooting'
  | 'pivot.skipped'
  | 'reboot'
  | 'stopped'
  | 'booted'
  | 'failure'
  | 'console';
export const EXPECT_EVENTS: readonly ExpectEvent[] = [
  'ignition',
  'pivot.pulling',
  'pivot.staging',
  'pivot.staged',
  'pivot.rebooting',
  'pivot.skipped',
  'reboot',
  'stopped',
  'booted',
  'failure',
  'console',
];

export type RegistryFault = 'down' | 'up' | 'corrupt-blob' | 'slow' | 'clear';
export const REGISTRY_FAULTS: readonly RegistryFault[] = ['down', 'up', 'corrupt-blob', 'slow', 'clear'];

interface StepBase {
  pos: Position;
  /** One line for humans, e.g. `expect node1 booted new within 10m`. */
  label: string;
}

export type Step =
  | (StepBase & { kind: 'up'; nodes: string[] })
  | (StepBase & {
      kind: 'expect';
      node: string;
      event: ExpectEvent;
      withinMs: number;
      /** For `booted`: an oscontainer or image name whose commit must be the booted one. */
      booted?: string;
      /** For `console` and `failure`: a regular expression the line / reason must match. */
      match?: string;
    })
  | (StepBase & { kind: 'assert'; node: string; booted?: string; reboots?: number; failed?: boolean })
  | (StepBase & { kind: 'fault'; registry: RegistryFault; bytesPerSecond?: number })
  | (StepBase & {
      kind: 'power-off';
      node: string;
      when?: PivotPhase;
      afterMs: number;
      withinMs: number;
      restart: boolean;
    })
  | (StepBase & { kind: 'reboot'; node: string })
  | (StepBase & { kind: 'wait'; ms: number })
  | (StepBase & { kind: 'pivot'; node: string; to: string })
  | (StepBase & { kind: 'down' });

export type StepKind = Step['kind'];

export interface Scenario {
  /** Path as given (for messages). */
  file: string;
  name: string;
  description?: string;
  /** Deadline for the whole run. */
  timeoutMs: number;
  images: Map<string, ImageSource>;
  oscontainers: Map<string, OscontainerSource>;
  registry: RegistrySpec;
  nodes: NodeDef[];
  steps: Step[];
}
