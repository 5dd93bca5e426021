/**
 * Ending the process. `process.exit()` joins libuv's worker threads first, so a native call that never returns
 * on one of them (a libvirt connect to a daemon that accepts and never answers) would keep a finished run alive
 * forever. The layer that makes such calls registers an exit that does not wait (`_exit(2)`); without one
 * (libvirt never loaded), no worker can be held and process.exit() is right.
 */
let immediate: ((code: number) => void) | undefined;

/** Called by src/vm/libvirt/ffi.ts once libvirt is loaded. */
export function registerImmediateExit(exit: (code: number) => void): void {
  immediate = exit;
}

/** Exit with `code` now; 'exit' listeners run first (the TUI restores the terminal there). */
export function exitProcess(code: number): never {
  process.exitCode = code;
  if (immediate) {
    process.emit('exit', code);
    immediate(code);
  }
  process.exit(code);
}
