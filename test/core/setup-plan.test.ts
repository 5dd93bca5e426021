/**
 * The set-up's decisions (scripts/setup-plan.mjs): which packages are missing, the one command a normal user is
 * told to run, and which URIs need this host's system daemons.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { repoRoot } from '../helpers/cli.js';

interface Plan {
  DEBIAN_PACKAGES: string[];
  fedoraPackages(debian: string[]): string[];
  missingFromDpkg(output: string, wanted?: string[]): string[];
  missingFromRpm(output: string): string[];
  installMessage(
    missing: string[],
    o: { distro: 'debian' | 'fedora'; root: boolean },
  ): { message: string; hint: string };
  setupUri(env: NodeJS.ProcessEnv, uid: number): string;
  needsSystemDaemons(uri: string): boolean;
  startDaemonsCommand(o: { systemd: boolean; root: boolean }): string;
  systemAccessHint(user: string, why: string, inGroup: boolean): string;
  podmanConfig(o: { systemd: boolean }): string | undefined;
}
const load = () => import(`${repoRoot}scripts/setup-plan.mjs`) as Promise<Plan>;

test('dpkg-query output: packages not reported installed are missing, in list order', async (t) => {
  const { missingFromDpkg } = await load();
  const output = 'skopeo installed\nostree not-installed\njq installed\n';
  t.deepEqual(missingFromDpkg(output, ['skopeo', 'ostree', 'jq', 'curl']), ['ostree', 'curl']);
  t.deepEqual(missingFromDpkg('', ['jq']), ['jq']);
});

test('rpm -q output: the "is not installed" lines name the missing packages', async (t) => {
  const { missingFromRpm } = await load();
  const output = 'skopeo-1.14.2-1.fc40.x86_64\npackage edk2-ovmf is not installed\npackage qemu-img is not installed\n';
  t.deepEqual(missingFromRpm(output), ['edk2-ovmf', 'qemu-img']);
});

test('a normal user missing Debian packages gets one sudo apt-get command naming exactly those, and the dnf one', async (t) => {
  const { installMessage } = await load();
  const { message, hint } = installMessage(['qemu-utils', 'ovmf', 'grub-pc-bin'], { distro: 'debian', root: false });
  t.is(message, 'missing Debian packages: qemu-utils ovmf grub-pc-bin');
  t.true(
    hint.includes('sudo apt-get update && sudo apt-get install -y --no-install-recommends qemu-utils ovmf grub-pc-bin'),
  );
  t.true(hint.includes('on Fedora/RHEL, untested: sudo dnf install -y qemu-img edk2-ovmf grub2-pc-modules'));
});

test('root is told the command without sudo; Fedora names come from rpm and are labelled untested', async (t) => {
  const { installMessage } = await load();
  t.false(installMessage(['jq'], { distro: 'debian', root: true }).hint.includes('sudo'));
  const fedora = installMessage(['edk2-ovmf', 'qemu-img'], { distro: 'fedora', root: false });
  t.is(fedora.message, 'missing Fedora/RHEL packages: edk2-ovmf qemu-img');
  t.true(fedora.hint.includes('untested'));
  t.true(fedora.hint.endsWith('sudo dnf install -y edk2-ovmf qemu-img'));
});

test('every Debian package has a Fedora name; shared ones appear once', async (t) => {
  const { DEBIAN_PACKAGES, fedoraPackages } = await load();
  const fedora = fedoraPackages(DEBIAN_PACKAGES);
  t.is(new Set(fedora).size, fedora.length);
  t.deepEqual(fedoraPackages(['systemd', 'systemd-sysv']), ['systemd']);
  for (const name of DEBIAN_PACKAGES) t.true(fedoraPackages([name]).length > 0, name);
});

test('the URI: LIBVIRT_DEFAULT_URI, else system for root and session for everyone else', async (t) => {
  const { setupUri } = await load();
  t.is(setupUri({}, 0), 'qemu:///system');
  t.is(setupUri({}, 1000), 'qemu:///session');
  t.is(setupUri({ LIBVIRT_DEFAULT_URI: 'qemu:///system' }, 1000), 'qemu:///system');
  t.is(setupUri({ LIBVIRT_DEFAULT_URI: 'qemu:///session' }, 0), 'qemu:///session');
});

test('only a local qemu:///system needs the system daemons', async (t) => {
  const { needsSystemDaemons } = await load();
  t.true(needsSystemDaemons('qemu:///system'));
  t.true(needsSystemDaemons('qemu+unix:///system?socket=/run/libvirt/libvirt-sock'));
  t.false(needsSystemDaemons('qemu:///session'));
  t.false(needsSystemDaemons('qemu+ssh://builder@host/system'));
  t.false(needsSystemDaemons('test:///default'));
  t.false(needsSystemDaemons('nonsense'));
});

test('starting the daemons: systemctl under systemd, the daemons themselves without; sudo for a normal user', async (t) => {
  const { startDaemonsCommand } = await load();
  t.is(startDaemonsCommand({ systemd: true, root: false }), 'sudo systemctl start virtlogd libvirtd');
  t.is(startDaemonsCommand({ systemd: false, root: false }), 'sudo virtlogd -d && sudo libvirtd -d');
  t.is(startDaemonsCommand({ systemd: false, root: true }), 'virtlogd -d && libvirtd -d');
});

test('qemu:///system refused for want of polkit: the group, the libvirtd.conf settings, and the session URI', async (t) => {
  const { systemAccessHint } = await load();
  const why =
    'error: internal error: Unable to get system bus connection: Could not connect: No such file or directory';
  const hint = systemAccessHint('ada', why, false);
  t.true(hint.includes('sudo adduser ada libvirt'));
  t.true(hint.includes('auth_unix_rw = "none"'));
  t.true(hint.includes('LIBVIRT_DEFAULT_URI=qemu:///session'));
  const member = systemAccessHint('ada', why, true);
  t.false(member.includes('adduser'));
  t.true(member.startsWith('ada is in the libvirt group; either run polkitd'));
  t.false(systemAccessHint('ada', 'Permission denied', true).includes('auth_unix_rw'));
});

test("README's one-time install command names exactly the set-up's packages", async (t) => {
  const { DEBIAN_PACKAGES } = await load();
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const command = /sudo apt-get install -y --no-install-recommends ([^`]*?)\nnpm start/.exec(readme)?.[1];
  t.truthy(command, 'the command in "As a normal user"');
  t.deepEqual((command ?? '').replace(/\\\n/g, ' ').trim().split(/\s+/), DEBIAN_PACKAGES);
});

test('podman without systemd: cgroupfs, events in a file, crun; with systemd, podman keeps its defaults', async (t) => {
  const { podmanConfig } = await load();
  const text = podmanConfig({ systemd: false }) ?? '';
  t.regex(text, /^\[engine\]$/m);
  t.regex(text, /^cgroup_manager = "cgroupfs"$/m);
  t.regex(text, /^events_logger = "file"$/m);
  t.is(podmanConfig({ systemd: true }), undefined);
});
