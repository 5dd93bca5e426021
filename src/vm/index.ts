/** The VM layer's public surface: the contract, the libvirt factory, and the pieces the CLI needs. */
export type { NodeSpec, VmHost, VmNode } from './host.js';
export { LibvirtError } from './libvirt/errors.js';
export { LibvirtHost, type OpenHostOptions, openHost } from './libvirt/host.js';
export { LibvirtNode } from './libvirt/node.js';
export { consoleLogPath, lastSession, listSessions, type SessionRecord } from './sessions.js';
