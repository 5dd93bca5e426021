// What the set-up needs and what it tells a user who lacks it: the package lists, the one command that installs
// what is missing (apt on Debian/Ubuntu, dnf on Fedora/RHEL), and whether the libvirt URI needs the system
// daemons. Pure and zero-dependency: scripts/setup.mjs imports it before node_modules exists, and
// test/core/setup-plan.test.ts tests it.

/**
 * Debian packages: the VM stack, the image tools, and docker-registry (distribution 2.8) as the reference peer for
 * registry tests and benchmarks and the upstream of the pull-through tests; python3 (tomllib, 3.11+) parses the
 * mirror drop-in in its unit test. Each maps to its Fedora package(s) — untested: the fixture recipe itself reads
 * Debian packages (dpkg -L, apt-get download), see README.md "As a normal user".
 */
export const PACKAGES = {
  'qemu-system-x86': ['qemu-system-x86'],
  'qemu-utils': ['qemu-img'],
  'libvirt-daemon-system': ['libvirt-daemon', 'libvirt-daemon-driver-qemu', 'libvirt-daemon-driver-storage-core'],
  'libvirt-clients': ['libvirt-client'],
  skopeo: ['skopeo'],
  ostree: ['ostree'],
  ignition: ['ignition'],
  'busybox-static': ['busybox'],
  // the fixture's kernel: Debian's cloud flavour (LZ4, for virtual machines; images/README.md "Speed")
  'linux-image-cloud-amd64': ['kernel-core'],
  'grub-pc-bin': ['grub2-pc-modules'],
  'grub-efi-amd64-bin': ['grub2-efi-x64-modules'],
  'grub-common': ['grub2-tools'],
  mtools: ['mtools'],
  dosfstools: ['dosfstools'],
  systemd: ['systemd'],
  'systemd-sysv': ['systemd'], // the fixture's /sbin/init (copied from the host's package)
  udev: ['systemd-udev'],
  passwd: ['shadow-utils'],
  'openssh-client': ['openssh-clients'],
  'openssh-server': ['openssh-server'], // the sshd on 127.0.0.1 the remote-host tests start (never a service)
  fdisk: ['util-linux'],
  e2fsprogs: ['e2fsprogs'],
  cpio: ['cpio'],
  binutils: ['binutils'], // as + ld: the fixture's stub of ICU's data library (images/fixture/tree.sh)
  ovmf: ['edk2-ovmf'],
  jq: ['jq'],
  'json-glib-tools': ['json-glib'], // json-glib-format: the oracle of rpm-ostree's pretty JSON in the stand-in tests
  curl: ['curl'],
  openssl: ['openssl'], // the embedded registry's TLS CA and certificate (src/registry/tls.ts)
  'docker-registry': ['docker-distribution'],
  python3: ['python3'],
  // Local images and derived builds (containers-storage:, podman build): podman as root and rootless.
  podman: ['podman'],
  crun: ['crun'],
  conmon: ['conmon'],
  uidmap: ['shadow-utils'],
  'fuse-overlayfs': ['fuse-overlayfs'],
  slirp4netns: ['slirp4netns'],
  zstd: ['zstd'], // zstd layers: the fixture guest's importer decompresses them
  // Secure Boot and TPM (firmware: uefi-secure, tpm: true): the fixture's signed ESP, libvirt's emulated TPM
  'shim-signed': ['shim-x64'],
  'grub-efi-amd64-signed': ['grub2-efi-x64'],
  swtpm: ['swtpm'],
  'swtpm-tools': ['swtpm-tools'],
  'tpm2-tools': ['tpm2-tools'],
  sbsigntool: ['sbsigntool'], // sbattach: build { fixture: N, kernel: unsigned }
};

/** Where the set-up puts podman's engine settings (containers.conf(5) drop-in: read by root and rootless podman). */
export const PODMAN_CONF = '/etc/containers/containers.conf.d/50-devpivot.conf';

/**
 * podman's engine settings for a host without systemd: cgroupfs (no systemd to ask for cgroups), events in a
 * file (no journald), crun. With systemd, podman's defaults (systemd, journald) are right: undefined.
 */
export function podmanConfig({ systemd }) {
  if (systemd) return undefined;
  return [
    '# Written by devpivot set-up: this host has no systemd (containers.conf(5)).',
    '[engine]',
    'cgroup_manager = "cgroupfs"',
    'events_logger = "file"',
    'runtime = "crun"',
    '',
  ].join('\n');
}

export const DEBIAN_PACKAGES = Object.keys(PACKAGES);

/** The Fedora names of some Debian packages, each once, in list order. */
export function fedoraPackages(debian) {
  return [...new Set(debian.flatMap((name) => PACKAGES[name] ?? [name]))];
}

/** The Debian packages `dpkg-query -W -f='${Package} ${db:Status-Status}\n'` did not report as installed. */
export function missingFromDpkg(output, wanted = DEBIAN_PACKAGES) {
  const installed = new Set(
    output
      .split('\n')
      .filter((line) => line.endsWith(' installed'))
      .map((line) => line.split(' ')[0]),
  );
  return wanted.filter((name) => !installed.has(name));
}

/** The Fedora packages `rpm -q NAME...` reported as not installed ("package X is not installed"). */
export function missingFromRpm(output) {
  return output
    .split('\n')
    .map((line) => /^package (\S+) is not installed$/.exec(line.trim())?.[1])
    .filter((name) => name !== undefined);
}

/**
 * The one message a user gets when packages are missing: the exact command that installs them, with `sudo`
 * unless they are root. `distro` is 'debian' (the names are Debian's) or 'fedora' (the names are Fedora's).
 */
export function installMessage(missing, { distro, root }) {
  const sudo = root ? '' : 'sudo ';
  if (distro === 'fedora') {
    return {
      message: `missing Fedora/RHEL packages: ${missing.join(' ')}`,
      hint: `install them (untested on Fedora/RHEL: devpivot is tested on Debian 12): ${sudo}dnf install -y ${missing.join(' ')}`,
    };
  }
  const apt = `${sudo}apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  return {
    message: `missing Debian packages: ${missing.join(' ')}`,
    hint: `install them: ${root ? apt : `sudo apt-get update && ${apt}`} (on Fedora/RHEL, untested: ${sudo}dnf install -y ${fedoraPackages(missing).join(' ')})`,
  };
}

/**
 * The libvirt URI `npm start`/`npm test` will use: LIBVIRT_DEFAULT_URI, else qemu:///system for root and
 * qemu:///session for everyone else (src/core/paths.ts libvirtUri, which this mirrors without node_modules).
 */
export function setupUri(env, uid) {
  return env.LIBVIRT_DEFAULT_URI || (uid === 0 ? 'qemu:///system' : 'qemu:///session');
}

/**
 * Whether the URI is served by this host's system daemons (libvirtd, virtlogd): a local qemu:///system. The
 * session URI autospawns a per-user daemon; a remote URI (qemu+ssh://host/system) uses that host's.
 */
export function needsSystemDaemons(uri) {
  const url = /^([a-z0-9+]+):\/\/([^/?]*)(\/[^?]*)?/.exec(uri);
  if (!url) return false;
  const [, scheme, host, path] = url;
  const local = host === '' || host === 'localhost';
  const transport = scheme.split('+')[1];
  return local && (transport === undefined || transport === 'unix') && (path ?? '').startsWith('/system');
}

/** The command that starts the system daemons: systemctl where systemd runs, else the daemons themselves. */
export function startDaemonsCommand({ systemd, root }) {
  const sudo = root ? '' : 'sudo ';
  return systemd ? `${sudo}systemctl start virtlogd libvirtd` : `${sudo}virtlogd -d && ${sudo}libvirtd -d`;
}

/**
 * What a normal user needs for qemu:///system when the daemon refused them (virsh's error in `why`; `inGroup`:
 * whether they are in the libvirt group already): membership of the socket's group, and an auth the daemon can do without polkit (Debian's default auth_unix_rw is
 * "polkit", which needs polkitd on a system D-Bus).
 */
export function systemAccessHint(user, why, inGroup) {
  const polkit = /system bus|polkit|authentication/i.test(why);
  return [
    inGroup
      ? `${user} is in the libvirt group;`
      : `add yourself to the libvirt group (sudo adduser ${user} libvirt, then log in again)`,
    polkit
      ? `${inGroup ? '' : 'and '}either run polkitd with a system D-Bus (Debian ships /usr/share/polkit-1/rules.d/60-libvirt.rules, which lets the libvirt group in), or set in /etc/libvirt/libvirtd.conf: unix_sock_group = "libvirt", unix_sock_rw_perms = "0770", auth_unix_rw = "none" and restart libvirtd`
      : `${inGroup ? '' : 'and '}check /etc/libvirt/libvirtd.conf: unix_sock_group and unix_sock_rw_perms must let that group in`,
    '— or use qemu:///session (the default for a normal user): LIBVIRT_DEFAULT_URI=qemu:///session',
  ].join(' ');
}
