/**
 * The contract between the engine and the VM layer (mantle's `platform.go`: Host -> Domain). The libvirt
 * implementation lives under src/vm/libvirt; engine tests use a fake with the same shape.
 * Implementations emit vm.* events (defined, started, console, reboot, stopped, crashed) on the bus they get.
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
  firmware: 'bios' | 'uefi';
  /**
   * Optional direct kernel boot (paths on the hypervisor host) instead of booting the disk through firmware.
   * devpivot's own flows never set it: real images boot from their disk. The VM layer's tests use it.
   */
  kernel?: { path: string; initrd?: string; cmdline?: string };
}

export interface VmNode {
  readonly name: string;
  readonly domain: string;
  /** Path of the full console log on this host. */
  readonly consoleLog: string;
  start(): Promise<void>;
  /** Pull the plug (virDomainDestroy): no shutdown, no sync. The disk stays; start() boots it again. */
  powerOff(): Promise<void>;
  /** Destroy, undefine and delete this node's volumes. Never throws. */
  destroy(): Promise<void>;
}

export interface VmHost {
  readonly uri: string;
  readonly sessionId: string;
  /** Define a node (overlay volume, Ignition volume, domain) without starting it. */
  createNode(spec: NodeSpec, signal?: AbortSignal): Promise<VmNode>;
  /** Everything this session created: domains and volumes. Never throws. */
  destroyAll(): Promise<void>;
  /** Close the connection (does not touch the nodes). */
  close(): Promise<void>;
}
