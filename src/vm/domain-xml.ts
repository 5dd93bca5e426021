/**
 * Pure builders for the libvirt XML devpivot defines: the domain, its volumes and the storage pool. No I/O, so
 * every choice here is unit-tested (test/vm/domain-xml.test.ts).
 */

/** The namespace of devpivot's <metadata> element: its presence is what marks a domain as devpivot's own. */
export const DEVPIVOT_XMLNS = 'https://devpivot.dev/xmlns/1';
/** The fw_cfg key Ignition reads on the qemu platform. */
export const IGNITION_FWCFG_KEY = 'opt/com.coreos/config';
/** `<sysinfo type='fwcfg'>` arrived in libvirt 6.5.0; older daemons get `-fw_cfg` on the qemu command line. */
export const SYSINFO_FWCFG_MIN_VERSION = 6_005_000;

import type { Firmware } from '../core/firmware.js';

export const OVMF = {
  code: '/usr/share/OVMF/OVMF_CODE_4M.fd',
  varsTemplate: '/usr/share/OVMF/OVMF_VARS_4M.fd',
} as const;

/**
 * OVMF's Secure Boot build (needs SMM, so a q35 machine) and the variable store with Microsoft's keys enrolled and
 * Secure Boot on (Debian `ovmf`, README.Debian: `OVMF_CODE_4M.ms.fd` + `OVMF_VARS_4M.ms.fd`). libvirt copies the
 * template into a per-domain store (`<nvram template=…>`), kept across the node's boots, removed with
 * VIR_DOMAIN_UNDEFINE_NVRAM.
 */
export const OVMF_SECURE = {
  code: '/usr/share/OVMF/OVMF_CODE_4M.ms.fd',
  varsTemplate: '/usr/share/OVMF/OVMF_VARS_4M.ms.fd',
} as const;

/** libvirt runs swtpm for `<tpm><backend type='emulator'/>`: the binaries it needs on the hypervisor host. */
export const SWTPM_FILES = ['/usr/bin/swtpm', '/usr/bin/swtpm_setup'] as const;

export type FwCfgMethod = 'sysinfo' | 'qemu-commandline';

export function fwCfgMethod(libVersion: number): FwCfgMethod {
  return libVersion >= SYSINFO_FWCFG_MIN_VERSION ? 'sysinfo' : 'qemu-commandline';
}

/** What devpivot records on every domain it defines. */
export interface DevpivotMetadata {
  session: string;
  node: string;
  /** The base image the node boots (as given by the user). */
  image: string;
  /** ISO time of definition. */
  created: string;
  /** Names of the volumes created for this node (overlay, Ignition, console log). */
  volumes: string[];
  /** The shared base image volume the overlay is backed by (never deleted with the node). */
  base: string;
  /** `127.0.0.1:PORT` forwarded to the guest's port 22, when the node has one (`devpivot ssh`). */
  ssh?: string;
  /**
   * The uid of the devpivot process that defined it: on a daemon several users share (qemu:///system for the
   * libvirt group), `ps`/`down`/`console` act only on the caller's own (vm/owner.ts).
   */
  owner?: number;
}

/**
 * A node's user-mode network as devpivot sets it up (docs/ARCHITECTURE.md "## Guest network"): an ssh port forward
 * on the host's loopback and the packet filter between the guest and slirp.
 */
export interface GuestNetworkSpec {
  /** Host port on 127.0.0.1 forwarded to the guest's port 22 (slirp `hostfwd`). */
  sshPort?: number;
  /** The filter's unix sockets (devpivot listens, QEMU connects): see vm/guest-filter.ts. */
  filter?: { fromGuest: string; toHost: string; toGuest: string };
}

export interface DomainXmlOptions {
  /** Domain name: `devpivot-<session>-<node>`. */
  name: string;
  metadata: DevpivotMetadata;
  domainType: 'kvm' | 'qemu';
  memoryMiB: number;
  vcpus: number;
  firmware: Firmware;
  /** OVMF code and vars template for UEFI (defaults: Debian/Ubuntu 4M builds; OVMF_SECURE for uefi-secure). */
  ovmf?: { code: string; varsTemplate: string };
  /**
   * An emulated TPM 2.0 (swtpm with per-domain state) on the TIS interface: with `tpm-crb` the Debian 6.1 guest
   * kernel stopped printing after its EVM lines on a q35/SMM domain under TCG here (4 min, no further output), with
   * `tpm-tis` it boots to login (tpm_tis MSFT0101:00: 2.0 TPM).
   */
  tpm?: boolean;
  /** Path of the node's qcow2 overlay on the hypervisor host. */
  disk: string;
  /** Path of the Ignition file on the hypervisor host, and how to hand it to qemu. */
  ignition: { path: string; method: FwCfgMethod };
  /** Where virtlogd copies the serial console on the hypervisor host. */
  consoleLog: string;
  /** Direct kernel boot (optional: disk images boot through firmware). Paths on the hypervisor host. */
  kernel?: { path: string; initrd?: string; cmdline?: string };
  /** Without it: libvirt's plain `<interface type='user'>`. */
  network?: GuestNetworkSpec;
}

/**
 * The x86-64-v2 features qemu64 lacks (it has cx16, lahf_lm and SSE3 already): RHEL 9, and so RHCOS 4.13 and later,
 * is built for x86-64-v2, and its glibc stops every program on a CPU without them ("Fatal glibc error: CPU does not
 * support x86-64-v2"). libvirt's default CPU under TCG is plain qemu64 (x86-64 v1), which a user's RHCOS 9 image
 * would not boot on; TCG emulates all four.
 */
export const TCG_V2_FEATURES = ['ssse3', 'sse4.1', 'sse4.2', 'popcnt'] as const;

/** qemu64 plus x86-64-v2: an AMD-vendor model, so the guest kernel reports Meltdown "Not affected" and keeps one page table. */
function tcgCpu(): string[] {
  return [
    "  <cpu mode='custom' match='exact'>",
    "    <model fallback='forbid'>qemu64</model>",
    ...TCG_V2_FEATURES.map((name) => `    <feature policy='require' name='${name}'/>`),
    '  </cpu>',
  ];
}

export function escapeXml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

export function unescapeXml(value: string): string {
  return value
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&amp;/g, '&');
}

export function domainName(sessionId: string, node: string): string {
  return `devpivot-${sessionId}-${node}`;
}

/**
 * Volume names: `devpivot-<session>--<node>.<suffix>`. The double dash cannot occur inside a session id (see
 * validateSessionId), so the prefix `devpivot-<session>--` selects exactly one session's volumes.
 */
export function volumePrefix(sessionId: string): string {
  return `devpivot-${sessionId}--`;
}

export function volumeName(sessionId: string, node: string, suffix: 'qcow2' | 'ign' | 'console.log'): string {
  return `${volumePrefix(sessionId)}${node}.${suffix}`;
}

export function baseVolumeName(sha256: string): string {
  return `devpivot-base-${sha256.slice(0, 16)}.qcow2`;
}

export const BASE_VOLUME_PATTERN = /^devpivot-base-[0-9a-f]{16}\.qcow2$/;

/** Session ids and node names: one rule, shared with scenario validation (core/names.ts). */
export { validName } from '../core/names.js';

export function metadataXml(meta: DevpivotMetadata): string {
  const attrs = [
    ['session', meta.session],
    ['node', meta.node],
    ['image', meta.image],
    ['created', meta.created],
    ['volumes', meta.volumes.join(' ')],
    ['base', meta.base],
    ...(meta.ssh ? [['ssh', meta.ssh]] : []),
    ...(meta.owner !== undefined ? [['owner', String(meta.owner)]] : []),
  ]
    .map(([key, value]) => `${key}="${escapeXml(value!)}"`)
    .join(' ');
  return `<devpivot:node xmlns:devpivot="${DEVPIVOT_XMLNS}" ${attrs}/>`;
}

/** Read devpivot's metadata element inside a full domain XML (it must carry devpivot's namespace). */
export function parseMetadata(xml: string): DevpivotMetadata | undefined {
  const element = /<(\w+):node\b[^>]*xmlns:\1="([^"]+)"[^>]*>|<node\b[^>]*xmlns="([^"]+)"[^>]*>/.exec(xml);
  if (!element) return undefined;
  if ((element[2] ?? element[3]) !== DEVPIVOT_XMLNS) return undefined;
  return readAttributes(element[0]);
}

/**
 * Read the element virDomainGetMetadata returns for devpivot's namespace: libvirt already selected it by
 * namespace and hands it back without one (`<node session=… …/>`).
 */
export function parseMetadataElement(xml: string): DevpivotMetadata | undefined {
  const element = /^\s*<(?:\w+:)?node\b[^>]*>/.exec(xml);
  return element ? readAttributes(element[0]) : undefined;
}

/** The live-only `started` attribute devpivot adds when a node boots. */
export function startedAttribute(xml: string): string | undefined {
  const match = /\sstarted="([^"]*)"/.exec(xml);
  return match ? unescapeXml(match[1]!) : undefined;
}

function readAttributes(element: string): DevpivotMetadata | undefined {
  const attr = (name: string) => {
    const match = new RegExp(`\\s${name}="([^"]*)"`).exec(element);
    return match ? unescapeXml(match[1]!) : undefined;
  };
  const session = attr('session');
  const node = attr('node');
  if (!session || !node) return undefined;
  const ssh = attr('ssh');
  const owner = attr('owner');
  return {
    session,
    node,
    image: attr('image') ?? '',
    created: attr('created') ?? '',
    volumes: (attr('volumes') ?? '').split(' ').filter(Boolean),
    base: attr('base') ?? '',
    ...(ssh ? { ssh } : {}),
    ...(owner !== undefined && /^\d+$/.test(owner) ? { owner: Number(owner) } : {}),
  };
}

/** The element to store with virDomainSetMetadata (libvirt adds the namespace from its key and URI). */
export function metadataElement(meta: DevpivotMetadata, extra: Record<string, string> = {}): string {
  const attrs = Object.entries({
    session: meta.session,
    node: meta.node,
    image: meta.image,
    created: meta.created,
    volumes: meta.volumes.join(' '),
    base: meta.base,
    ...(meta.ssh ? { ssh: meta.ssh } : {}),
    ...(meta.owner !== undefined ? { owner: String(meta.owner) } : {}),
    ...extra,
  })
    .map(([key, value]) => `${key}="${escapeXml(value)}"`)
    .join(' ');
  return `<node ${attrs}/>`;
}

export function domainXml(o: DomainXmlOptions): string {
  const e = escapeXml;
  const secure = o.firmware === 'uefi-secure';
  const ovmf = o.ovmf ?? (secure ? OVMF_SECURE : OVMF);
  const machine = secure ? 'q35' : 'pc';
  const qemuArgs = [...fwCfgArgs(o), ...networkArgs(o.network, machine)];
  const qemuNs = qemuArgs.length > 0 ? ` xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0"` : '';
  const os: string[] = [`    <type arch='x86_64' machine='${machine}'>hvm</type>`];
  if (o.firmware !== 'bios') {
    // secure='yes': only SMM code may write the variable store, so the guest cannot switch Secure Boot off
    os.push(`    <loader readonly='yes'${secure ? " secure='yes'" : ''} type='pflash'>${e(ovmf.code)}</loader>`);
    os.push(`    <nvram template='${e(ovmf.varsTemplate)}'/>`);
  }
  if (o.kernel) {
    os.push(`    <kernel>${e(o.kernel.path)}</kernel>`);
    if (o.kernel.initrd) os.push(`    <initrd>${e(o.kernel.initrd)}</initrd>`);
    if (o.kernel.cmdline) os.push(`    <cmdline>${e(o.kernel.cmdline)}</cmdline>`);
  } else {
    os.push("    <boot dev='hd'/>");
  }
  const lines = [
    `<domain type='${o.domainType}'${qemuNs}>`,
    `  <name>${e(o.name)}</name>`,
    `  <description>devpivot node ${e(o.metadata.node)} of session ${e(o.metadata.session)}</description>`,
    '  <metadata>',
    `    ${metadataXml(o.metadata)}`,
    '  </metadata>',
    `  <memory unit='MiB'>${o.memoryMiB}</memory>`,
    `  <vcpu>${o.vcpus}</vcpu>`,
    '  <os>',
    ...os,
    '  </os>',
  ];
  if (o.ignition.method === 'sysinfo') {
    lines.push(
      "  <sysinfo type='fwcfg'>",
      `    <entry name='${IGNITION_FWCFG_KEY}' file='${e(o.ignition.path)}'/>`,
      '  </sysinfo>',
    );
  }
  lines.push(`  <features><acpi/><apic/>${secure ? "<smm state='on'/>" : ''}</features>`);
  if (o.domainType === 'kvm') lines.push("  <cpu mode='host-passthrough'/>");
  else lines.push(...tcgCpu());
  lines.push(
    '  <on_poweroff>destroy</on_poweroff>',
    '  <on_reboot>restart</on_reboot>',
    '  <on_crash>destroy</on_crash>',
    '  <devices>',
    "    <disk type='file' device='disk'>",
    "      <driver name='qemu' type='qcow2'/>",
    `      <source file='${e(o.disk)}'/>`,
    "      <target dev='vda' bus='virtio'/>",
    '    </disk>',
    ...(o.network ? [] : ["    <interface type='user'>", "      <model type='virtio'/>", '    </interface>']),
    "    <serial type='pty'>",
    `      <log file='${e(o.consoleLog)}' append='on'/>`,
    "      <target port='0'/>",
    '    </serial>',
    "    <console type='pty'>",
    "      <target type='serial' port='0'/>",
    '    </console>',
    // pvpanic: a guest kernel panic becomes a libvirt CRASHED event (then on_crash destroys the domain)
    // instead of a silent hang or reboot loop.
    "    <panic model='isa'/>",
    // the TPM's state (libvirt: /var/lib/libvirt/swtpm/<uuid>/) lives as long as the domain is defined
    ...(o.tpm ? ["    <tpm model='tpm-tis'>", "      <backend type='emulator' version='2.0'/>", '    </tpm>'] : []),
    "    <rng model='virtio'>",
    "      <backend model='random'>/dev/urandom</backend>",
    '    </rng>',
    '  </devices>',
  );
  if (qemuArgs.length > 0) {
    lines.push(
      '  <qemu:commandline>',
      ...qemuArgs.map((arg) => `    <qemu:arg value='${e(arg)}'/>`),
      '  </qemu:commandline>',
    );
  }
  lines.push('</domain>');
  return `${lines.join('\n')}\n`;
}

/** qemu's option syntax separates fields with commas: a literal comma in a value is written twice. */
function qemuValue(value: string): string {
  return value.replace(/,/g, ',,');
}

function fwCfgArgs(o: DomainXmlOptions): string[] {
  if (o.ignition.method !== 'qemu-commandline') return [];
  return ['-fw_cfg', `name=${IGNITION_FWCFG_KEY},file=${qemuValue(o.ignition.path)}`];
}

/** The netdev and NIC devpivot defines itself (libvirt 9.0 forwards ports only with passt). */
export const NETDEV_ID = 'devpivot-net0';
/**
 * A slot of the root bus libvirt does not hand out to a domain with devpivot's few devices: on `pc` it allocates
 * from 0x02 up; on `q35` it puts devices behind root ports in slot 0x01 and the chipset's own in 0x1f.
 */
const NIC_PCI_SLOT = '0x1e';
/** The root bus's name: `pci.0` on i440FX (`pc`), `pcie.0` on Q35. */
const ROOT_BUS = { pc: 'pci.0', q35: 'pcie.0' } as const;

/**
 * The user-mode network on the QEMU command line: slirp with the ssh forward, the virtio NIC, and the
 * filter-redirector that hands every frame the guest sends to devpivot's filter instead of slirp (queue=rx: the
 * frames the netdev receives from the NIC) and takes back the ones it lets through; a second redirector on the
 * other queue lets the filter answer the guest. Each chardev reconnects every second, so the domain starts
 * before devpivot listens and survives its restart; while nothing listens, the guest's frames are dropped.
 */
function networkArgs(network: GuestNetworkSpec | undefined, machine: keyof typeof ROOT_BUS): string[] {
  if (!network) return [];
  const netdev = ['user', `id=${NETDEV_ID}`];
  if (network.sshPort !== undefined) netdev.push(`hostfwd=tcp:127.0.0.1:${network.sshPort}-:22`);
  const args = [
    '-netdev',
    netdev.join(','),
    '-device',
    `virtio-net-pci,netdev=${NETDEV_ID},bus=${ROOT_BUS[machine]},addr=${NIC_PCI_SLOT}`,
  ];
  const filter = network.filter;
  if (!filter) return args;
  const chardev = (id: string, path: string) => ['-chardev', `socket,id=${id},path=${qemuValue(path)},reconnect=1`];
  return [
    ...args,
    ...chardev('devpivot-from-guest', filter.fromGuest),
    ...chardev('devpivot-to-host', filter.toHost),
    ...chardev('devpivot-to-guest', filter.toGuest),
    '-object',
    `filter-redirector,id=devpivot-filter,netdev=${NETDEV_ID},queue=rx,outdev=devpivot-from-guest,indev=devpivot-to-host`,
    '-object',
    `filter-redirector,id=devpivot-reply,netdev=${NETDEV_ID},queue=tx,indev=devpivot-to-guest`,
  ];
}
