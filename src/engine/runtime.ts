/**
 * The engine's side of the steps' runtime interface (`src/steps/runtime.ts`): node actions on the VM host with
 * their deadlines, the waits on node logs, the registry's fault switches, what nodes reported.
 */
import { DRIVERS } from '../drivers/index.js';
import {
  type NodeLogEvent,
  type RegistryControl,
  SSH_FAILED,
  type SshResult,
  StepFailure,
  type StepRuntime,
} from '../steps/runtime.js';
import { formatDuration } from '../steps/units.js';
import { abandonWarning, PHASE_DEADLINES, withDeadline } from './deadline.js';
import type { Deps } from './deps.js';
import type { NodeWatches } from './node-watch.js';
import { guestPullspec, type World } from './prepare.js';
import { refusedRequest } from './refused-request.js';
import { runOverSsh, type SshTarget } from './ssh.js';
import {
  APPLY_MARKER,
  AS_ROOT,
  applyStagedScript,
  pivotRequestScript,
  quoteShell,
  REBOOT_MARKER,
  stageLaterScript,
  updateRequestScript,
} from './ssh-pivot.js';
import type { StagedWatchdog } from './staged-watchdog.js';
import { tagOscontainer } from './tags.js';
import { guestTagPullspec } from './world.js';

/** How often a command is tried again while the node's sshd does not answer yet. */
const SSH_RETRY_MS = 3000;

export class EngineRuntime implements StepRuntime {
  constructor(
    readonly world: World,
    readonly watches: NodeWatches,
    /** The run's signal: actions stop when the run is stopped. */
    readonly signal: AbortSignal,
    /** The caller's signal only (Ctrl-C): `down` still finishes when the scenario's timeout ran out. */
    readonly removalSignal: AbortSignal,
    /** Told when a `pivot` step asked a node to reboot itself. */
    readonly staged?: StagedWatchdog,
    /** What `tag` steps point tags with. */
    readonly deps?: Deps,
  ) {
    watches.bus.on('registry.request', (e) => {
      if (!e.node || e.method !== 'GET' || e.status !== 200 || !e.path.includes('/blobs/sha256:')) return;
      if (e.length !== undefined && e.bytes !== e.length) return; // cut short: not fetched
      const list = this.#fetched.get(e.node) ?? [];
      list.push(e.path.slice(e.path.lastIndexOf('/') + 1));
      this.#fetched.set(e.node, list);
    });
  }

  /** Blob GETs per node since its last up or update request (`fetched`). */
  #fetched = new Map<string, string[]>();

  fetched(node: string): readonly string[] {
    return this.#fetched.get(node) ?? [];
  }

  layersOf(name: string): readonly string[] | undefined {
    return this.world.images.get(name)?.layers;
  }

  async waitFor(
    node: string,
    match: (event: NodeLogEvent) => boolean,
    ms: number,
    what: string,
    options: { expectFailureOn?: string } = {},
  ): Promise<NodeLogEvent> {
    return (await this.watches.waitFor(node, match, ms, what, options))!;
  }

  async pause(ms: number): Promise<void> {
    await this.watches.waitFor(undefined, () => false, ms, 'wait', { timeoutOk: true });
  }

  async up(name: string): Promise<void> {
    const watch = this.watches.get(name);
    if (watch.vm) throw new StepFailure(`node ${name} is already up`);
    this.#fetched.delete(name);
    const def = watch.def;
    const prepared = this.world.nodes.get(name)!;
    const host = this.world.host!;
    const network = await this.world.access?.forNode(name);
    // The node is recorded as soon as it exists, so cleanup removes it even when the run stops right then.
    await withDeadline(
      `defining node ${name}`,
      PHASE_DEADLINES.createNode,
      this.signal,
      async (signal) => {
        watch.vm = await host.createNode(
          {
            name,
            image: prepared.disk,
            ignition: prepared.ignition,
            memoryMiB: def.memoryMiB,
            vcpus: def.vcpus,
            firmware: def.firmware,
            ...(def.tpm ? { tpm: true } : {}),
            ...(network ? { network } : {}),
          },
          signal,
        );
      },
      abandonWarning(this.watches.bus),
    );
    const vm = watch.vm!;
    watch.cursor = watch.log.length;
    await withDeadline(`starting node ${name}`, PHASE_DEADLINES.startNode, this.signal, () => vm.start());
  }

  async powerCycle(name: string, restart: boolean): Promise<void> {
    const watch = this.watches.get(name);
    const vm = watch.vm;
    if (!vm) throw new StepFailure(`node ${name} is not up`);
    await withDeadline(`powering off ${name}`, PHASE_DEADLINES.powerOff, this.signal, () => vm.powerOff());
    watch.cursor = watch.log.length;
    if (restart) await withDeadline(`starting node ${name}`, PHASE_DEADLINES.startNode, this.signal, () => vm.start());
  }

  async down(): Promise<void> {
    const host = this.world.host;
    if (!host) return;
    for (const watch of this.watches.all()) {
      const vm = watch.vm;
      if (vm)
        await withDeadline(`removing node ${watch.def.name}`, PHASE_DEADLINES.cleanup, this.removalSignal, () =>
          vm.destroy(),
        );
      watch.vm = undefined;
    }
    await withDeadline('removing the VMs', PHASE_DEADLINES.cleanup, this.removalSignal, () => host.destroyAll());
  }

  registry(): RegistryControl | undefined {
    const registry = this.world.registry;
    if (!registry) return undefined;
    const signal = this.signal;
    return {
      faults: registry.faults,
      stop: () => withDeadline('stopping the registry', PHASE_DEADLINES.registry, signal, () => registry.stop()),
      start: () => withDeadline('restarting the registry', PHASE_DEADLINES.registry, signal, () => registry.start()),
    };
  }

  /** The ostree commit an oscontainer carries, or that an image boots. */
  commitOf(name: string): string | undefined {
    return this.world.images.get(name)?.commit ?? this.world.imageCommits.get(name);
  }

  digestOf(name: string): string | undefined {
    const image = this.world.images.get(name);
    return image?.format === 'native' ? (image.instance ?? image.digest) : undefined;
  }

  boots(node: string): readonly { version: string; commit: string; image?: string }[] {
    return this.watches.get(node).boots();
  }

  failures(node: string): readonly { reason: string }[] {
    return this.watches.get(node).failures.map((failure) => failure.event);
  }

  #sshTarget(node: string): SshTarget {
    if (!this.watches.get(node).vm) throw new StepFailure(`node ${node} is not up`);
    const target = this.world.access?.target(node);
    if (!target) throw new StepFailure(`node ${node} has no ssh access (devpivot could not make a session key)`);
    return target;
  }

  async ssh(node: string, command: string, options: { timeoutMs: number }): Promise<SshResult> {
    return runOverSsh(this.#sshTarget(node), command, { timeoutMs: options.timeoutMs, signal: this.signal });
  }

  async requestPivot(node: string, to: string, timeoutMs: number): Promise<void> {
    const image = this.world.images.get(to);
    if (!image || !this.world.guestRegistry) throw new StepFailure(`oscontainer ${to} is not in the registry`);
    const pullspec = guestPullspec(this.world, to, node);
    this.#fetched.delete(node);
    const script = pivotRequestScript(this.watches.get(node).def.driver, pullspec, to);
    await this.#requestUpdate(node, script, pullspec, timeoutMs, 'the pivot request');
  }

  async tagImage(name: string, ref: string): Promise<void> {
    if (!this.deps) throw new StepFailure("tag steps need the engine's dependencies");
    await tagOscontainer({ deps: this.deps, bus: this.watches.bus, signal: this.signal }, this.world, name, ref);
  }

  async requestUpgrade(node: string, timeoutMs: number, options: { downloadOnly?: boolean } = {}): Promise<void> {
    const def = this.watches.get(node).def;
    if (!def.follow) throw new StepFailure(`node ${node} follows no tag`);
    this.#fetched.delete(node);
    const upgrade = DRIVERS[def.driver].upgrade;
    if (options.downloadOnly) {
      if ('refused' in upgrade.later)
        throw new StepFailure(`node ${node} cannot stage for later: ${upgrade.later.refused}`);
      const pullspec = guestTagPullspec(this.world, def.follow, node);
      await this.#requestUpdate(
        node,
        stageLaterScript(upgrade.later.stage()),
        pullspec,
        timeoutMs,
        'the upgrade request',
      );
      return;
    }
    // A tag-following tool resolves the tag itself; legacy and mcd are asked for the digest it names now.
    const name = this.world.tags.get(def.follow);
    if (upgrade.follows === 'digest' && !name) throw new StepFailure(`tag ${def.follow} names no oscontainer`);
    const pullspec =
      upgrade.follows === 'tag'
        ? guestTagPullspec(this.world, def.follow, node)
        : guestPullspec(this.world, name!, node);
    const script = updateRequestScript(upgrade.request(pullspec, quoteShell), def.follow);
    await this.#requestUpdate(node, script, pullspec, timeoutMs, 'the upgrade request');
  }

  /** An update request (a pivot, an upgrade): reboots when it staged; a refusal or no change is pivot.skipped. */
  async #requestUpdate(node: string, script: string, pullspec: string, timeoutMs: number, what: string) {
    const result = await this.#requestAsRoot(node, script, timeoutMs, what, ({ output }) =>
      output.includes(REBOOT_MARKER),
    );
    // What the tool printed (over ssh, so not on the console): one log line each, as a real MCD logs it.
    for (const line of result.output.split('\n')) {
      if (line.trim() && !line.startsWith('devpivot: '))
        this.watches.bus.emit({ kind: 'log', level: 'info', source: node, message: line.trimEnd() });
    }
    // The reboot it asked for may end the connection before ssh reports the status.
    if (result.output.includes(REBOOT_MARKER)) {
      this.staged?.rebootRequested(node);
      return;
    }
    // The tool refused the request or found nothing to change (the ref or image it is on): nothing staged, as on a
    // real node; not a step failure.
    const refused = refusedRequest(result.output, pullspec);
    if (refused) this.watches.bus.emit({ kind: 'guest.pivot.skipped', node, ...refused });
  }

  async requestFinalize(node: string, timeoutMs: number): Promise<void> {
    const def = this.watches.get(node).def;
    const later = DRIVERS[def.driver].upgrade.later;
    if ('refused' in later) throw new StepFailure(`node ${node} cannot stage for later: ${later.refused}`);
    const name = def.follow ? this.world.tags.get(def.follow) : undefined;
    const digest = name ? this.digestOf(name) : undefined;
    if (!digest) throw new StepFailure(`tag ${def.follow ?? '(none)'} of node ${node} names no native oscontainer`);
    // The tool reboots once it unlocked the deployment, which may end the connection before ssh reports the status.
    await this.#requestAsRoot(
      node,
      applyStagedScript(later.apply(digest, quoteShell)),
      timeoutMs,
      'the finalize request',
      ({ code, output }) => output.includes(APPLY_MARKER) && (code === null || code === SSH_FAILED || code > 128),
    );
    this.staged?.rebootRequested(node);
  }

  async requestRollback(node: string, timeoutMs: number): Promise<void> {
    const rollback = DRIVERS[this.watches.get(node).def.driver].rollback;
    const script = ['set -e', ...rollback.request(quoteShell), ''].join('\n');
    // The tool reboots once the order is written, which may end the connection before ssh reports the status.
    // A tool's own error (exit 1) after the line is still a failure: rpm-ostree prints it before it writes.
    await this.#requestAsRoot(
      node,
      script,
      timeoutMs,
      'the rollback request',
      ({ code, output }) => rollback.written.test(output) && (code === null || code === SSH_FAILED || code > 128),
    );
  }

  /**
   * Run `script` as root on `node` over ssh until it ran (exit 0, or `handedOver` its output), retrying while sshd
   * does not answer yet; the node's cursor moves to the end of its log first. A refusal (`refusedRequest`) is
   * returned, anything else that failed is a StepFailure naming `what`.
   */
  async #requestAsRoot(
    node: string,
    script: string,
    timeoutMs: number,
    what: string,
    handedOver: (result: SshResult) => boolean,
  ): Promise<SshResult> {
    const target = this.#sshTarget(node);
    const watch = this.watches.get(node);
    watch.cursor = watch.log.length;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (this.signal.aborted) throw this.signal.reason;
      const result = await runOverSsh(target, AS_ROOT, {
        timeoutMs: Math.max(left, 1),
        input: script,
        signal: this.signal,
      });
      if (this.signal.aborted) throw this.signal.reason;
      if (result.code === 0 || handedOver(result) || refusedRequest(result.output)) return result;
      const tail = result.output.trim().split('\n').slice(-6).join('\n');
      if (result.code !== SSH_FAILED || deadline - Date.now() < SSH_RETRY_MS) {
        const status =
          result.code === null ? `no answer within ${formatDuration(timeoutMs)}` : `exit status ${result.code}`;
        throw new StepFailure(`${what} to ${node} failed (${status})${tail ? `:\n${tail}` : ''}`);
      }
      // sshd is not up yet (the node is still booting): try again, failing fast on guest failures meanwhile.
      await this.pause(SSH_RETRY_MS);
    }
  }
}
