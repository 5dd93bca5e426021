/**
 * Every event devpivot emits, as one discriminated union keyed on `kind` (docs/ARCHITECTURE.md "## Events and
 * their contracts"). Producers live in the registry, oscontainer, vm and engine (its classifier) modules, and each
 * states in its contract how often it emits (vm.*: src/vm/host.ts), so consumers never de-duplicate; reporters
 * handle every kind (see `EventFormatters`).
 */
export type PivotPhase = 'pulling' | 'staging' | 'staged' | 'rebooting';
export const PIVOT_PHASES: readonly PivotPhase[] = ['pulling', 'staging', 'staged', 'rebooting'];

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A `guest.failure` class a scenario or a reporter can act on (`secure-boot`: engine/secure-boot.ts). */
export type FailureCause = 'secure-boot';

export type DevpivotEvent =
  | { kind: 'log'; level: LogLevel; source: string; message: string }
  // registry
  | { kind: 'registry.listening'; url: string; storage: string; ca?: string }
  | {
      kind: 'registry.request';
      method: string;
      path: string;
      status: number;
      /** Body bytes sent. */
      bytes: number;
      /**
       * For a blob GET: the body length the response promised (Content-Length). `bytes < length` is a transfer
       * cut short: the client went away, or the registry stopped (`fault: down`) in the middle of it.
       */
      length?: number;
      /** For a blob GET under `fault: corrupt-blob`: the content sent was altered. */
      corrupted?: true;
      ms: number;
      client: string;
      /**
       * The node that made the request: it came in on that node's own port of the embedded registry (docs/
       * ARCHITECTURE.md "Per-node ports"). Absent on the main port (devpivot itself, external clients).
       */
      node?: string;
    }
  | { kind: 'registry.stopped'; url: string }
  /** One fetch from the pull-through upstream, when it ends (registry/pull-through/pull-through.ts). */
  | {
      kind: 'registry.upstream';
      what: 'blob' | 'manifest';
      repository: string;
      digest: string;
      /** `stored`: verified and in the store; `failed`: nothing stored (`error` says why). */
      outcome: 'stored' | 'failed';
      bytes: number;
      error?: string;
    }
  | {
      kind: 'blob.progress';
      repository: string;
      digest: string;
      sent: number;
      total: number;
      client: string;
      /** As in `registry.request`: the node whose port the request came in on; absent on the main port. */
      node?: string;
    }
  // oscontainers
  | { kind: 'image.progress'; ref: string; phase: string; done: number; total: number | null }
  | { kind: 'image.built'; ref: string; digest: string; commit: string; version: string }
  | { kind: 'image.pushed'; ref: string; digest: string }
  | { kind: 'image.pulled'; ref: string; digest: string }
  // VMs
  | { kind: 'vm.defined'; node: string; domain: string }
  | { kind: 'vm.started'; node: string; domain: string }
  | { kind: 'vm.console'; node: string; line: string }
  | { kind: 'vm.reboot'; node: string; domain: string }
  | { kind: 'vm.stopped'; node: string; domain: string; reason: string }
  | { kind: 'vm.crashed'; node: string; domain: string; reason: string }
  // what the guest says (console classifier)
  | { kind: 'guest.ignition'; node: string; ok: boolean }
  | { kind: 'guest.pivot'; node: string; phase: PivotPhase; target: string }
  /** The guest refused a pivot because it already runs the target ("Already at target pivot; exiting..."). */
  | { kind: 'guest.pivot.skipped'; node: string; target: string; reason: string }
  /** `image`: what booted by digest (`host/repo@sha256:…`) when the guest knows it (the report line's `image`). */
  | { kind: 'guest.booted'; node: string; bootId: string; version: string; commit: string; image?: string }
  /**
   * What the update tool itself says of its progress (engine/guest-progress.ts): bootc's `--progress-fd` events
   * (`task` pulling, importing, staging; `bytes` for pulling) and rpm-ostree's per-layer lines (`task` pulling).
   * `subtask`: the last subtask's description (a layer, "Importing Image", "Removing old images").
   */
  | {
      kind: 'guest.progress';
      node: string;
      tool: 'bootc' | 'rpm-ostree';
      task: string;
      steps: number;
      stepsTotal: number;
      bytes?: number;
      bytesTotal?: number;
      /** A byte update in the middle of a layer (bootc sends those lossily); absent on each step's event. */
      partial?: true;
      subtask?: string;
    }
  /**
   * greenboot's health checks (engine/greenboot.ts): `ok` false when a required check failed (`check`: its script
   * name, when the console named it) or the boot went red; true when the boot went green. A health failure is what
   * the node's own checks decided, not a failure of devpivot or of the pivot.
   */
  | { kind: 'guest.health'; node: string; ok: boolean; check?: string; line: string }
  /**
   * GRUB's boot counter ran out, the previous deployment booted, and greenboot's fallback service rolled the
   * deployment order back (`tool`: the command it ran, `rpm-ostree rollback` or `bootc rollback`).
   */
  | { kind: 'guest.fallback'; node: string; tool: 'rpm-ostree' | 'bootc'; line: string }
  /** `cause`: the class of failure when devpivot knows it (`secure-boot`: a signature the boot chain refused). */
  | { kind: 'guest.failure'; node: string; reason: string; line: string; cause?: FailureCause }
  // scenario runs
  | { kind: 'run.start'; scenario: string; nodes: string[] }
  | { kind: 'step.start'; index: number; name: string }
  | { kind: 'step.pass'; index: number; name: string; ms: number }
  | { kind: 'step.fail'; index: number; name: string; ms: number; error: string }
  | { kind: 'run.end'; ok: boolean; ms: number };

export type EventKind = DevpivotEvent['kind'];
export type EventOf<K extends EventKind> = Extract<DevpivotEvent, { kind: K }>;

/** An event as delivered to subscribers: stamped with the wall-clock time it was emitted. */
export type Stamped<E extends DevpivotEvent = DevpivotEvent> = E & { at: number };

/** A formatter per kind: a reporter declared with this type fails to compile when a kind is missing. */
export type EventFormatters<R> = { [K in EventKind]: (event: Stamped<EventOf<K>>) => R };
