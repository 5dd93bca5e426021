import type { Firmware } from '../core/firmware.js';
import type { GuestNetworkSpec } from './domain-xml.js';

export type { GuestNetworkSpec } from './domain-xml.js';

/**
 * The contract between the engine and the VM layer (mantle's `platform/platform.go`: Flight -> Cluster ->
 * Machine, guarantees written in the contract). The libvirt implementation lives under src/vm/libvirt; engine
 * tests use a fake with the same shape. See docs/ARCHITECTURE.md "## Events and their contracts".
 *
 * Events: an implementation emits vm.* events on the bus it is given, asynchronously (never from inside a
 * hypervisor callback) and in the order the hypervisor reported them:
 * - `vm.defined` once per successful `createNode`;
 * - `vm.started` each time the domain starts (`start()`, also after `powerOff()`); a guest reboot is not a start;
 * - `vm.reboot` exactly once per guest reboot; consumers never de-duplicate. The guest then boots in a fresh
 *   hypervisor process (a reset under TCG keeps stale translated code that slows the next boot many times over),
 *   and no guest code runs between its reset and that process (the hypervisor stops at the reset); neither is a
 *   `vm.stopped` nor a `vm.started`;
 * - `vm.stopped` once per stop, with the reason (guest shut down, destroyed, crashed, ...);
 * - `vm.crashed` once per crash (a panic event, or a stop whose reason is a crash, not both);
 * - `vm.console` once per console line, none lost between the start and the first line (see `VmNode.start`);
 * - `image.progress` (phase `upload`) while a base image is copied into the storage pool (one upload per image
 *   digest, shared by the nodes that boot it).
 * Problems that do not fail the call (a volume that cannot be deleted at cleanup) are `log` events with level
 * `warn`, source `vm`.
 */
export interface NodeSpec {
  /** Node name within the session, e.g. "node1"; the domain name is derived from it and the session id. */
  name: string;
  /** qcow2 base image on this host (the VM gets a copy-on-write overlay; the base is never written). */
  image: string;
  /** Ignition config as JSON text, delivered through fw_cfg under opt/com.coreos/config. */
  ignition: string;
  memoryMiB: number;
  vcpus: number;
  firmware: Firmware;
  /**
   * An emulated TPM 2.0 (libvirt's swtpm backend). Its state lives with the domain: kept across the node's reboots
   * and power cycles, removed when the domain is undefined (`destroy`).
   */
  tpm?: boolean;
  /**
   * Optional direct kernel boot (paths on the hypervisor host) instead of booting the disk through firmware.
   * devpivot's own flows never set it: real images boot from their disk. The VM layer's tests use it.
   */
  kernel?: { path: string; initrd?: string; cmdline?: string };
  /**
   * The guest network devpivot sets up: an ssh forward on 127.0.0.1 (recorded in the domain's metadata as `ssh`)
   * and the packet filter that limits the guest to the registry (docs/ARCHITECTURE.md "## Guest network").
   * Without it, plain user-mode networking: the guest reaches everything the host reaches.
   */
  network?: GuestNetworkSpec;
}

export interface VmNode {
  readonly name: string;
  /** The hypervisor's name for it: `devpivot-<session>-<node>`. */
  readonly domain: string;
  /** Path of the full console log on this host (kept after destroy, for `devpivot logs`). */
  readonly consoleLog: string;
  /**
   * Boot the node. The CPU is held until the console is attached, so every console line from the first one on
   * becomes a `vm.console` event. Throws VM_NOT_FOUND when the domain was removed behind devpivot's back.
   */
  start(): Promise<void>;
  /**
   * Pull the plug (virDomainDestroy): no shutdown, no sync. The disk stays; start() boots it again. Powering
   * off a node that is already off is not an error.
   */
  powerOff(): Promise<void>;
  /**
   * Stop its CPU and keep the guest as it is (virDomainSuspend): for a node whose boot failed where its firmware or
   * bootloader would retry for ever, burning a host core. powerOff() and destroy() work on it as on a running one;
   * `virsh resume` lets it go on. A node that is not running is left as it is.
   */
  pause(): Promise<void>;
  /** Destroy, undefine and delete this node's volumes. Never throws (problems become warnings); idempotent. */
  destroy(): Promise<void>;
}

export interface VmHost {
  readonly uri: string;
  readonly sessionId: string;
  /**
   * Define a node (copy-on-write overlay over the base image, Ignition volume, domain) without starting it.
   * Throws a DevpivotError (VM_HOST_CLOSED, VM_BAD_NODE_NAME, VM_NODE_EXISTS, VM_NAME_TAKEN, IMAGE_*,
   * LIBVIRT_*); on failure the volumes it created are removed again. A leftover domain of the same name from an
   * earlier run of this session is replaced. Honours `signal` between its phases.
   */
  createNode(spec: NodeSpec, signal?: AbortSignal): Promise<VmNode>;
  /**
   * Remove everything this session created: domains and volumes, also those of earlier processes of the same
   * session (found by their metadata). Never throws (problems become warnings).
   */
  destroyAll(): Promise<void>;
  /** Close the connection; idempotent. Does not touch the nodes (they keep running: `--keep`). */
  close(): Promise<void>;
}
