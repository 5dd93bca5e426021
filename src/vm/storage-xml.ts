/** libvirt XML for devpivot's storage: the `devpivot` dir pool and its volumes (overlays, Ignition files, logs). */
import { escapeXml, unescapeXml } from './domain-xml.js';

/** A dir storage pool. */
export function poolXml(name: string, path: string): string {
  return [
    "<pool type='dir'>",
    `  <name>${escapeXml(name)}</name>`,
    '  <target>',
    `    <path>${escapeXml(path)}</path>`,
    '    <permissions><mode>0755</mode></permissions>',
    '  </target>',
    '</pool>',
    '',
  ].join('\n');
}

export interface VolumeXmlOptions {
  name: string;
  /** Bytes: the virtual size for qcow2, the file size for raw. */
  capacity: number;
  format: 'qcow2' | 'raw';
  /** Backing file (path on the hypervisor host) for a copy-on-write overlay. */
  backing?: { path: string; format: 'qcow2' };
  /** File mode: the Ignition file must be readable by the unprivileged qemu user. */
  mode?: string;
  /** The file's owner (the qemu user, for a file only qemu reads). */
  owner?: { uid: number; gid: number };
}

export function volumeXml(o: VolumeXmlOptions): string {
  const lines = [
    '<volume>',
    `  <name>${escapeXml(o.name)}</name>`,
    `  <capacity unit='bytes'>${o.capacity}</capacity>`,
    `  <allocation unit='bytes'>0</allocation>`,
    '  <target>',
    `    <format type='${o.format}'/>`,
  ];
  if (o.mode || o.owner) {
    const owner = o.owner ? `<owner>${o.owner.uid}</owner><group>${o.owner.gid}</group>` : '';
    lines.push(`    <permissions>${o.mode ? `<mode>${o.mode}</mode>` : ''}${owner}</permissions>`);
  }
  lines.push('  </target>');
  if (o.backing) {
    lines.push(
      '  <backingStore>',
      `    <path>${escapeXml(o.backing.path)}</path>`,
      `    <format type='${o.backing.format}'/>`,
      '  </backingStore>',
    );
  }
  lines.push('</volume>', '');
  return lines.join('\n');
}

/** The target path of a pool, from its XML. */
export function poolPath(xml: string): string | undefined {
  const match = /<target>[\s\S]*?<path>([^<]+)<\/path>/.exec(xml);
  return match ? unescapeXml(match[1]!) : undefined;
}
