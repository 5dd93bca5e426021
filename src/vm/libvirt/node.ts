import { DevpivotError } from '../../core/errors.js';
import type { DevpivotEvent } from '../../core/events.js';
import { DEVPIVOT_XMLNS, metadataElement, parseMetadataElement } from '../domain-xml.js';
import type { VmNode } from '../host.js';
import { type Connection, UndefineFlag } from './connection.js';
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
}

/** One domain of the session (the VmNode contract in ../host.ts). */
/** Starts tried for a cold restart after a guest reboot before the node is given up as crashed. */
const RESTART_ATTEMPTS = 3;

export class LibvirtNode implements VmNode {
  readonly name: string;
  readonly domain: string;
  readonly consoleLog: string;
  readonly console: ConsoleWatch;
  readonly #host: NodeHost;
  /** start, powerOff, destroy and the restart after a guest reboot run one at a time, in call order. */
  #queue: Promise<unknown> = Promise.resolve();

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
   * The guest rebooted (QEMU has reset it in place): boot it again in a fresh QEMU process instead, as a power
   * cycle does. Under TCG a reset keeps the previous boot's translated code, and every store into a page that
   * held it takes QEMU's self-modifying-code path until the stale translations are gone: the next boot's GRUB
   * and kernel start ran many times slower (images/README.md, "Speed"). The guest goes through the firmware as
   * after a reset; its disk, NVRAM and fw_cfg are the domain's. Nothing happens when the domain stopped
   * meanwhile; when it cannot be started again (three tries), that is a `vm.crashed` and a `vm.stopped` with the
   * reason. Never rejects.
   */
  restartAfterReboot(): Promise<void> {
    return this.#serial(async () => {
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
        // The old console stream ended with the old process; #start opens the new one.
        this.console.domainStopped();
        // A start right after the destroy can fail while the old process's resources are still going away
        // (seen once in a three-node run: QEMU ended at once, `reason=failed`); try again before giving up.
        for (let attempt = 1; ; attempt++) {
          lifecycle.expectRestart(this.domain, 'start');
          try {
            await this.#start();
            break;
          } catch (error) {
            lifecycle.cancelRestart(this.domain, 'start');
            if (attempt >= RESTART_ATTEMPTS) throw error;
            this.#host.warn(`${this.domain} did not start again (attempt ${attempt}): ${(error as Error).message}`);
            await new Promise((resolve) => setTimeout(resolve, 2000));
          }
        }
      } catch (error) {
        // The guest is gone for good: the engine fails the node at once (vm.crashed) instead of waiting out a step.
        const reason = `not started again after its guest rebooted: ${(error as Error).message}`;
        this.#host.emit({ kind: 'vm.crashed', node: this.name, domain: this.domain, reason });
        this.#host.emit({ kind: 'vm.stopped', node: this.name, domain: this.domain, reason });
      }
    });
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

  /** Destroy, undefine and delete this node's volumes. Never throws. */
  destroy(): Promise<void> {
    return this.#serial(() => this.#destroy());
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
