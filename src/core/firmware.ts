/**
 * A node's firmware: SeaBIOS, OVMF, or OVMF's Secure Boot build with Microsoft's keys enrolled (kola's
 * `--qemu-firmware uefi-secure`, bcvk's `--firmware uefi-secure`). One list for the scenario, the CLI and the VM layer.
 */
export const FIRMWARES = ['bios', 'uefi', 'uefi-secure'] as const;
export type Firmware = (typeof FIRMWARES)[number];

export function isFirmware(value: string): value is Firmware {
  return (FIRMWARES as readonly string[]).includes(value);
}
