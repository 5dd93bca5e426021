import { DevpivotError } from '../../core/errors.js';
import type { DevpivotEvent } from '../../core/events.js';
import { DEVPIVOT_XMLNS, metadataElement, parseMetadataElement } from '../domain-xml.js';
import type { VmNode } from '../host.js';
import { type Connection, UndefineFlag } from './connection.js';
import { ConsoleWatch } from './console-watch.js';
import { LibvirtError, VirErr } from './errors.js';
import { POOL_NAME } from './pool.js';

/** What a node needs of its host: the current connection (it changes on reconnect) and the bus. */
export interface NodeHost {
  readonly uri: string;
  readonly connection: Connection;
  emit(event: DevpivotEvent): void;
  warn(message: string): void;
  /** The node was destroyed: the host stops tracking it. */
  forget(node: LibvirtNode): void;
}

/** One domain of the session (the VmNode contract in ../host.ts). */
export class LibvirtNode implements VmNode {
  readonly name: string;
  readonly domain: string;
  readonly consoleLog: string;
  readonly console: ConsoleWatch;
  readonly #host: NodeHost;

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

  /** Boot: start paused, attach the console, record the start time, then let the CPU run (no output is lost). */
  async start(): Promise<void> {
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

  async powerOff(): Promise<void> {
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
  async destroy(): Promise<void> {
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
