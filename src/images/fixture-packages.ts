/** The Debian packages whose versions decide what the fixture build produces (part of its cache key). */
export function fixturePackages(kernel: string): string[] {
  return [
    `linux-image-${kernel}`,
    ...['busybox-static', 'ostree', 'skopeo', 'jq', 'ignition', 'grub-pc-bin', 'grub-efi-amd64-bin', 'systemd'],
    ...['libsystemd-shared', 'systemd-sysv', 'udev', 'passwd', 'login', 'util-linux', 'mount', 'coreutils'],
    // (openssh-server, ostree-boot and libwrap0 are not installed on the host: build.sh downloads them once)
    ...['openssh-client', 'mtools', 'dosfstools'],
  ];
}
