/** The VM layer's contract and the session records the CLI reads; the libvirt implementation is `vm/libvirt/`. */
export type { NodeSpec, VmHost, VmNode } from './host.js';
export { consoleLogPath, lastSession, listSessions, type SessionRecord } from './sessions.js';
