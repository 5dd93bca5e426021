/**
 * A Secure Boot refusal on the console: the firmware, shim or GRUB would not run the next stage because its
 * signature did not verify. The node cannot boot that deployment; waiting for it would only end in a timeout.
 * Each marker is the tool's own message (cited; the strings are also in the shipped binaries: `strings` of
 * shim-signed's shimx64.efi.signed, grub-efi-amd64-signed's grubx64.efi.signed):
 * - OVMF/EDK II's boot manager (MdeModulePkg/Library/UefiBootManagerLib/BmBoot.c, "%a: failed to load Boot%04x
 *   \"%s\" from %s: %r"): LoadImage returns EFI_ACCESS_DENIED when an image fails verification under the deny
 *   policy, EFI_SECURITY_VIOLATION under the defer policy (tianocore/edk2 Bugzilla 2785), e.g.
 *   `BdsDxe: failed to load Boot0002 "UEFI Misc Device" from PciRoot(0x0)/Pci(0x2,0x0): Access Denied`;
 * - shim (rhboot/shim shim.c, 16.1): `Verification failed: %r` when the second stage's signature is not trusted
 *   (db, MokList, its vendor certificate), then `Failed to load image %s: %r` and `start_image() returned %r`;
 *   `image did not pass SBAT verification` when its SBAT generation is revoked;
 * - GRUB, Debian 2.06 (grub-core/kern/efi/sb.c, the shim_lock verifier): `error: bad shim signature.` when shim's
 *   protocol refuses the kernel (2.12 prefixes the source position: `error: ../../grub-core/kern/efi/sb.c:182:bad
 *   shim signature.`); `prohibited by secure boot policy` for a module it may not load.
 */
const MARKERS: [RegExp, string][] = [
  [
    /failed to load Boot[0-9A-Fa-f]{4} .*: (Access Denied|Security Violation)\s*$/,
    'the firmware refused the boot loader',
  ],
  [/Verification failed: \(0x[0-9A-Fa-f]+\) (Security Violation|Access Denied)/, 'shim refused the next stage'],
  [/image did not pass SBAT verification/, 'shim refused the next stage (SBAT)'],
  [/error: (?:\S+:\d+:)?bad shim signature/, 'GRUB refused the kernel: shim did not verify it'],
  [/prohibited by secure boot policy/, 'GRUB refused a file under the Secure Boot policy'],
];

/** What refused, when `line` is one of the refusals above. */
export function secureBootRefusal(line: string): string | undefined {
  for (const [pattern, what] of MARKERS) if (pattern.test(line)) return what;
  return undefined;
}
