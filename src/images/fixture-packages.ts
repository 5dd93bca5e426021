/** The Debian packages whose versions decide what the fixture build produces (part of its cache key). */
export function fixturePackages(kernel: string): string[] {
  return [`linux-image-${kernel}`, 'busybox-static', 'ostree', 'skopeo', 'ignition', 'grub-pc-bin'];
}
