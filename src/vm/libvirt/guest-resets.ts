/**
 * Guest resets that QEMU turned into a stop, for a domain whose live on_reboot is `destroy` (LibvirtNode sets it
 * at each start): QEMU's own SHUTDOWN event with reason `guest-reset`, read through libvirt-qemu's monitor events.
 * libvirt delivers it before its SHUTDOWN and STOPPED lifecycle events, which say only "after guest request", as
 * for a power-off (seen with libvirt 9.0 and QEMU 7.2, `virsh qemu-monitor-event` and `virsh event`).
 */
import { callAsync } from './call.js';
import type { Connection } from './connection.js';
import { libvirt, libvirtQemu, type Ptr, registerCallback, unregisterCallback } from './ffi.js';

/**
 * Call `handler` with the domain's name at each guest reset on `conn`. Returns the async unsubscribe, or
 * undefined where libvirt-qemu is missing or the daemon refuses the registration.
 */
export async function subscribeGuestResets(
  conn: Connection,
  handler: (domain: string) => void,
): Promise<(() => Promise<void>) | undefined> {
  const qemu = libvirtQemu();
  if (!qemu) return undefined;
  const lib = libvirt();
  const callback = registerCallback(
    'virConnectDomainQemuMonitorEventCallback',
    (_c: Ptr, dom: Ptr, _event: string, _s: number, _us: number, details: string | null) => {
      if (guestReset(details)) handler(lib.virDomainGetName(dom) ?? '');
    },
  );
  let id: number;
  try {
    id = await callAsync('QEMU monitor event registration', qemu.virConnectDomainQemuMonitorEventRegister, [
      conn.ptr,
      null,
      'SHUTDOWN',
      callback,
      null,
      null,
      0,
    ]);
  } catch {
    setImmediate(() => unregisterCallback(callback));
    return undefined;
  }
  return async () => {
    if (!conn.closed)
      await callAsync('QEMU monitor event deregistration', qemu.virConnectDomainQemuMonitorEventDeregister, [
        conn.ptr,
        id,
      ]).catch(() => {});
    setImmediate(() => unregisterCallback(callback));
  };
}

/** QEMU's SHUTDOWN event data (`{"guest":true,"reason":"guest-reset"}`, QAPI ShutdownCause) says the guest reset. */
export function guestReset(details: string | null): boolean {
  try {
    return (JSON.parse(details ?? '') as { reason?: unknown }).reason === 'guest-reset';
  } catch {
    return false;
  }
}
