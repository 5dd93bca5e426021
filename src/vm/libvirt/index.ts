/** The libvirt implementation of the VM contract: the factory the engine uses, its host, node and errors. */
export { LibvirtError } from './errors.js';
export { LibvirtHost, type OpenHostOptions, openHost } from './host.js';
export { LibvirtNode } from './node.js';
