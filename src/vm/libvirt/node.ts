import { DevpivotError } from '../../core/errors.js';
import type { DevpivotEvent } from '../../core/events.js';
import { DEVPIVOT_XMLNS, metadataElement, parseMetadataElement } from '../domain-xml.js';
import type { VmNode } from '../host.js';
import { type Connection, LifecycleAction, LifecycleType, UndefineFlag } from './connection.js';
import { ConsoleWatch } from './console-watch.js';
import { LibvirtError, VirErr } from './errors.js';
import type { LifecycleTranslator } from './lifecycle.js';
import { POOL_NAME } from './pool.js';

/** What a node needs of its host: the current connection (it changes on reconnect) and the bus. */
export interface NodeHost {
  readonly uri: string;
  readonly connection: Connection;
  emit(event: DevpivotEvent): void;
  warn(message: string): void;
  /** The node was destroyed: the host stops tracking it. */
  forget(node: LibvirtNode): void;
  /** Told of a cold restart's calls, so the events they cause are not reported as a stop and a start. */
  readonly lifecycle: Pick<LifecycleTranslator, 'expectRestart' | 'cancelRestart'>;
  /**
   * The host hears of guest resets that QEMU turns into a stop (guest-resets.ts): a started node
   * then has its live on_reboot set to `destroy`, so no guest code runs between a reset and the fresh process.
   */
  readonly guestResets: boolean;
}

/** Starts tried for a cold restart after a guest reboot before the node is given up as crashed. */
const RESTART_ATTEMPTS = 3;
/** How long after a restart's start an ended QEMU (`failed`) still counts as that restart failing. */
export const RESTART_SETTLE_MS = 30_000;

/** One domain of the session (the VmNode contract in ../host.ts). */
export class LibvirtNode implements VmNode {
  readonly name: string;
  readonly domain: string;
  readonly consoleLog: string;
  readonly console: ConsoleWatch;
  readonly #host: NodeHost;
  /** start, powerOff, destroy and the restart after a guest reboot run one at a time, in call order. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The last restart after a guest reboot: when its QEMU started, and how many starts it has taken. */
  #restart: { at: number; starts: number } | undefined;
  /** Being removed (destroy, the host's destroyAll): a guest reboot no longer starts it again. */
  #removed = false;

  constructor(host: NodeHost, name: string, domain: string, consoleLog: string) {
    this.#host = host;
    this.name = name;
    this.domain = domain;
    this.consoleLog = consoleLog;
    this.console = new ConsoleWatch({
      domain,
      logPath: consoleLog,
      connection: () => host.connection,
      onLine: (line) => host.emit({ kind: 'vm.console', node: name, line }),
      onWarning: (message) => host.warn(message),
    });
  }

  async #lookup() {
    const domain = await this.#host.connection.lookupDomain(this.domain);
    if (!domain)
      throw new DevpivotError('VM_NOT_FOUND', `domain ${this.domain} does not exist on ${this.#host.uri}`, {
        hint: 'it was removed outside devpivot (virsh undefine?); create the node again',
      });
    return domain;
  }

  #serial<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(operation, operation);
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Boot: start paused, attach the console, record the start time, then let the CPU run (no output is lost). */
  start(): Promise<void> {
    return this.#serial(() => this.#start());
  }

  async #start(): Promise<void> {
    const domain = await this.#lookup();
    try {
      await domain.startPaused();
      if (this.#host.guestResets)
        await domain
          .setLiveLifecycleAction(LifecycleType.reboot, LifecycleAction.destroy)
          .catch((error) =>
            this.#host.warn(`${this.domain}: a guest reboot stays a reset in the same QEMU: ${error.message}`),
          );
      try {
        await this.console.attach();
      } catch (error) {
        this.#host.warn(`console of ${this.domain} not attached: ${(error as Error).message}`);
        this.console.reattachSoon();
      }
      const xml = await domain.metadata(DEVPIVOT_XMLNS).catch(() => undefined);
      const meta = xml ? parseMetadataElement(xml) : undefined;
      if (meta) {
        const live = metadataElement(meta, { started: new Date().toISOString() });
        await domain
          .setMetadata(live, 'devpivot', DEVPIVOT_XMLNS, 1)
          .catch((error) => this.#host.warn(`cannot record the start time of ${this.domain}: ${error.message}`));
      }
      await domain.resume();
    } finally {
      domain.free();
    }
  }

  powerOff(): Promise<void> {
    return this.#serial(() => this.#powerOff());
  }

  /**
   * The guest rebooted and QEMU stopped instead of resetting it (live on_reboot `destroy`, set at each start; the
   * process is gone): boot it again in a fresh QEMU process, as a power cycle does. Under TCG a reset in the same
   * process keeps the previous boot's translated code, and every store into a page that held it takes QEMU's
   * self-modifying-code path until the stale translations are gone: the next boot's GRUB and kernel start ran many
   * times slower (images/README.md, "Speed"). The guest goes through the firmware as after a reset; its disk,
   * NVRAM and fw_cfg are the domain's. When it cannot be started again (three tries), that is a `vm.crashed` and
   * a `vm.stopped` with the reason. Never rejects.
   */
  startAfterReset(): Promise<void> {
    return this.#serial(async () => {
      if (this.#removed) return;
      try {
        await this.#bootFresh();
      } catch (error) {
        this.#givenUp(error);
      }
    });
  }

  /**
   * The guest rebooted and QEMU reset it in place (where the live on_reboot could not be set to `destroy`): end
   * that process and boot the guest in a fresh one, as startAfterReset does. The reset guest runs until the
   * destroy lands, so its firmware and GRUB may run a few seconds there (and GRUB count a boot attempt). Nothing
   * happens when the domain stopped meanwhile. Never rejects.
   */
  restartAfterReboot(): Promise<void> {
    return this.#serial(async () => {
      if (this.#removed) return;
      const lifecycle = this.#host.lifecycle;
      try {
        const domain = await this.#lookup();
        try {
          if (!(await domain.isActive())) return;
          lifecycle.expectRestart(this.domain, 'stop');
          await domain.destroy().catch((error) => {
            lifecycle.cancelRestart(this.domain, 'stop');
            throw error;
          });
        } finally {
          domain.free();
        }
        await this.#bootFresh();
      } catch (error) {
        this.#givenUp(error);
      }
    });
  }

  /** Boot the stopped guest again in a new QEMU process, as a new restart (its own start count). */
  async #bootFresh(): Promise<void> {
    // The old console stream ended with the old process; #start opens the new one.
    this.console.domainStopped();
    this.#restart = { at: 0, starts: 0 };
    await this.#startAgain();
  }

  /**
   * devpivot lets go of the node still running (the host closes without removing it): its live on_reboot goes back
   * to the definition's `restart`, so a reboot without devpivot is libvirt's warm reset, not a stop nobody starts
   * again. Never rejects.
   */
  releaseReboots(): Promise<void> {
    return this.#serial(async () => {
      if (!this.#host.guestResets) return;
      try {
        const domain = await this.#host.connection.lookupDomain(this.domain);
        if (!domain) return;
        try {
          if (await domain.isActive())
            await domain.setLiveLifecycleAction(LifecycleType.reboot, LifecycleAction.restart);
        } finally {
          domain.free();
        }
      } catch (error) {
        this.#host.warn(`${this.domain}: a reboot after devpivot exits may power it off: ${(error as Error).message}`);
      }
    });
  }

  /**
   * QEMU ended (`failed`) within RESTART_SETTLE_MS of a restart after a guest reboot: libvirtd terminated the new
   * process 1.7–2 s after it started, its log saying `reason=crashed` with no guest panic, while the guest was in
   * GRUB (four times in loaded runs on this project's hosts, old and new kernels). It is the same guest reboot, so
   * the node is started again, as a restart's own failed starts are. Returns false when that is not the case (no
   * recent restart, or its starts are used up): the stop is then reported as it is. Never rejects.
   */
  restartFailedSoon(now = Date.now()): boolean {
    const restart = this.#restart;
    if (this.#removed || !restart || now - restart.at > RESTART_SETTLE_MS || restart.starts >= RESTART_ATTEMPTS)
      return false;
    restart.starts++; // counted now: another failure before this start runs sees it
    this.console.domainStopped();
    void this.#serial(async () => {
      try {
        await this.#startAgain(true);
      } catch (error) {
        this.#givenUp(error);
      }
    });
    return true;
  }

  /**
   * Start the domain again for a restart after a guest reboot, its STARTED event not reported (expectRestart). A
   * start right after the destroy can fail while the old process's resources are still going away (seen in a
   * three-node run: QEMU ended at once, `reason=failed`): tried RESTART_ATTEMPTS times in all before it throws.
   * `counted`: the caller has counted this first start already.
   */
  async #startAgain(counted = false): Promise<void> {
    const restart = this.#restart!;
    const lifecycle = this.#host.lifecycle;
    for (let first = true; ; first = false) {
      if (!(first && counted)) restart.starts++;
      lifecycle.expectRestart(this.domain, 'start');
      try {
        await this.#start();
        restart.at = Date.now();
        return;
      } catch (error) {
        lifecycle.cancelRestart(this.domain, 'start');
        if (restart.starts >= RESTART_ATTEMPTS) throw error;
        this.#host.warn(`${this.domain} did not start again (start ${restart.starts}): ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  }

  /** The guest is gone for good: the engine fails the node at once (vm.crashed) instead of waiting out a step. */
  #givenUp(error: unknown): void {
    this.#restart = undefined;
    const reason = `not started again after its guest rebooted: ${(error as Error).message}`;
    this.#host.emit({ kind: 'vm.crashed', node: this.name, domain: this.domain, reason });
    this.#host.emit({ kind: 'vm.stopped', node: this.name, domain: this.domain, reason });
  }

  async #powerOff(): Promise<void> {
    const domain = await this.#lookup();
    try {
      await domain.destroy();
    } catch (error) {
      if (!(error instanceof LibvirtError && error.is(VirErr.operationInvalid))) throw error;
    } finally {
      domain.free();
    }
  }

  pause(): Promise<void> {
    return this.#serial(async () => {
      const domain = await this.#lookup();
      try {
        if (await domain.isActive()) await domain.suspend();
      } catch (error) {
        // It stopped meanwhile, or is paused already: nothing runs.
        if (!(error instanceof LibvirtError && error.is(VirErr.operationInvalid))) throw error;
      } finally {
        domain.free();
      }
    });
  }

  /** Destroy, undefine and delete this node's volumes. Never throws. */
  destroy(): Promise<void> {
    this.#removed = true;
    return this.#serial(() => this.#destroy());
  }

  /**
   * The host is about to remove the node (destroyAll): a guest reboot no longer starts it again (a start queued
   * but not begun does not run). Resolves once a start already under way has finished, so no start lands between
   * the removal's destroy and its undefine.
   */
  removing(): Promise<void> {
    this.#removed = true;
    return this.#serial(async () => {});
  }

  async #destroy(): Promise<void> {
    this.console.detach();
    try {
      const conn = this.#host.connection;
      const domain = await conn.lookupDomain(this.domain);
      let volumes: string[] = [];
      if (domain) {
        try {
          volumes = parseMetadataElement((await domain.metadata(DEVPIVOT_XMLNS)) ?? '')?.volumes ?? [];
          if (await domain.isActive()) await domain.destroy().catch(() => {});
          await domain.undefine(UndefineFlag.nvram | UndefineFlag.managedSave);
        } finally {
          domain.free();
        }
      }
      const pool = await conn.lookupPool(POOL_NAME);
      if (pool) {
        try {
          await pool.refresh().catch(() => {});
          for (const name of volumes) {
            const volume = await pool.lookupVolume(name).catch(() => undefined);
            if (!volume) continue;
            await volume
              .delete()
              .catch((error) => this.#host.warn(`cannot delete volume ${name}: ${(error as Error).message}`))
              .finally(() => volume.free());
          }
        } finally {
          pool.free();
        }
      }
    } catch (error) {
      this.#host.warn(`destroying ${this.domain} failed: ${(error as Error).message}`);
    }
    this.#host.forget(this);
  }
}
