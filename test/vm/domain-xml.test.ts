import test from 'ava';
import {
  DEVPIVOT_XMLNS,
  type DomainXmlOptions,
  domainName,
  domainXml,
  fwCfgMethod,
  metadataElement,
  metadataXml,
  parseMetadata,
  parseMetadataElement,
  startedAttribute,
  validName,
  volumeName,
  volumePrefix,
} from '../../src/vm/domain-xml.js';
import { poolPath, poolXml, volumeXml } from '../../src/vm/storage-xml.js';

const base: DomainXmlOptions = {
  name: 'devpivot-s1-node1',
  metadata: {
    session: 's1',
    node: 'node1',
    image: '/images/rhcos & co.qcow2',
    created: '2026-01-01T00:00:00.000Z',
    volumes: ['devpivot-s1--node1.qcow2', 'devpivot-s1--node1.ign'],
    base: 'devpivot-base-0123456789abcdef.qcow2',
  },
  domainType: 'qemu',
  memoryMiB: 1536,
  vcpus: 2,
  firmware: 'bios',
  disk: '/pool/devpivot-s1--node1.qcow2',
  ignition: { path: '/pool/devpivot-s1--node1.ign', method: 'sysinfo' },
  consoleLog: '/pool/devpivot-s1--node1.console.log',
};

test('BIOS domain: TCG type, memory, vcpus, virtio disk, user networking, fw_cfg sysinfo, pty serial with log', (t) => {
  const xml = domainXml(base);
  t.true(xml.startsWith("<domain type='qemu'>"));
  t.regex(xml, /<name>devpivot-s1-node1<\/name>/);
  t.regex(xml, /<memory unit='MiB'>1536<\/memory>/);
  t.regex(xml, /<vcpu>2<\/vcpu>/);
  t.regex(xml, /<boot dev='hd'\/>/);
  t.notRegex(xml, /<loader/);
  t.regex(
    xml,
    /<driver name='qemu' type='qcow2'\/>\s*<source file='\/pool\/devpivot-s1--node1.qcow2'\/>\s*<target dev='vda' bus='virtio'\/>/,
  );
  t.regex(xml, /<interface type='user'>\s*<model type='virtio'\/>/);
  t.regex(
    xml,
    /<sysinfo type='fwcfg'>\s*<entry name='opt\/com.coreos\/config' file='\/pool\/devpivot-s1--node1.ign'\/>/,
  );
  t.regex(xml, /<serial type='pty'>\s*<log file='\/pool\/devpivot-s1--node1.console.log' append='on'\/>/);
  t.regex(xml, /<on_reboot>restart<\/on_reboot>/);
  t.regex(xml, /<on_crash>destroy<\/on_crash>/);
  t.regex(xml, /<panic model='isa'\/>/);
  t.notRegex(xml, /qemu:commandline/);
  t.notRegex(xml, /host-passthrough/);
});

test('KVM when the probe says so', (t) => {
  const xml = domainXml({ ...base, domainType: 'kvm' });
  t.true(xml.startsWith("<domain type='kvm'>"));
  t.regex(xml, /<cpu mode='host-passthrough'\/>/);
  t.notRegex(xml, /qemu64/);
});

test('TCG: qemu64 with the x86-64-v2 features RHEL 9 requires, each required', (t) => {
  const xml = domainXml(base);
  t.regex(xml, /<cpu mode='custom' match='exact'>\s*<model fallback='forbid'>qemu64<\/model>/);
  for (const name of ['ssse3', 'sse4.1', 'sse4.2', 'popcnt'])
    t.regex(xml, new RegExp(`<feature policy='require' name='${name.replace('.', '\\.')}'/>`));
});

test('UEFI uses OVMF code read-only and a vars template', (t) => {
  const xml = domainXml({ ...base, firmware: 'uefi' });
  t.regex(xml, /<loader readonly='yes' type='pflash'>\/usr\/share\/OVMF\/OVMF_CODE_4M.fd<\/loader>/);
  t.regex(xml, /<nvram template='\/usr\/share\/OVMF\/OVMF_VARS_4M.fd'\/>/);
});

test('uefi-secure: the Secure Boot OVMF pair on a q35 machine with SMM, the NIC on its root bus', (t) => {
  const xml = domainXml({ ...base, firmware: 'uefi-secure', network: { sshPort: 2222 } });
  t.regex(xml, /<type arch='x86_64' machine='q35'>hvm<\/type>/);
  t.regex(xml, /<loader readonly='yes' secure='yes' type='pflash'>\/usr\/share\/OVMF\/OVMF_CODE_4M.ms.fd<\/loader>/);
  t.regex(xml, /<nvram template='\/usr\/share\/OVMF\/OVMF_VARS_4M.ms.fd'\/>/);
  t.regex(xml, /<features><acpi\/><apic\/><smm state='on'\/><\/features>/);
  t.regex(xml, /virtio-net-pci,netdev=devpivot-net0,bus=pcie\.0,addr=0x1e/);
  t.notRegex(xml, /<tpm/);
  // plain UEFI and BIOS stay on i440FX, without SMM
  const plain = domainXml({ ...base, firmware: 'uefi', network: { sshPort: 2222 } });
  t.regex(plain, /machine='pc'/);
  t.notRegex(plain, /smm|secure=/);
  t.regex(plain, /bus=pci\.0,addr=0x1e/);
});

test('tpm: an emulated TPM 2.0 (swtpm) on the TIS interface', (t) => {
  const xml = domainXml({ ...base, tpm: true });
  t.regex(xml, /<tpm model='tpm-tis'>\s*<backend type='emulator' version='2.0'\/>\s*<\/tpm>/);
});

test('old libvirt gets -fw_cfg on the qemu command line, commas doubled', (t) => {
  t.is(fwCfgMethod(6_004_000), 'qemu-commandline');
  t.is(fwCfgMethod(6_005_000), 'sysinfo');
  t.is(fwCfgMethod(9_000_000), 'sysinfo');
  const xml = domainXml({ ...base, ignition: { path: '/p/a,b.ign', method: 'qemu-commandline' } });
  t.regex(xml, /xmlns:qemu="http:\/\/libvirt.org\/schemas\/domain\/qemu\/1.0"/);
  t.regex(xml, /<qemu:arg value='-fw_cfg'\/>\s*<qemu:arg value='name=opt\/com.coreos\/config,file=\/p\/a,,b.ign'\/>/);
  t.notRegex(xml, /<sysinfo/);
});

test('direct kernel boot replaces the boot device', (t) => {
  const xml = domainXml({ ...base, kernel: { path: '/k/vmlinuz', initrd: '/k/initrd', cmdline: 'console=ttyS0 a<b' } });
  t.regex(
    xml,
    /<kernel>\/k\/vmlinuz<\/kernel>\s*<initrd>\/k\/initrd<\/initrd>\s*<cmdline>console=ttyS0 a&lt;b<\/cmdline>/,
  );
  t.notRegex(xml, /<boot dev/);
});

test('every domain carries devpivot metadata that round-trips, escaped', (t) => {
  const xml = domainXml(base);
  t.true(xml.includes(`xmlns:devpivot="${DEVPIVOT_XMLNS}"`));
  t.true(xml.includes('image="/images/rhcos &amp; co.qcow2"'));
  t.deepEqual(parseMetadata(xml), base.metadata);
  // libvirt may hand the element back with a different prefix and an extra live-only attribute
  const returned = metadataXml(base.metadata).replace(
    '<devpivot:node xmlns:devpivot=',
    '<dp:node started="x" xmlns:dp=',
  );
  t.deepEqual(parseMetadata(returned), base.metadata);
});

test('the element virDomainGetMetadata returns (no namespace) and the live start time', (t) => {
  const stored = metadataElement(base.metadata, { started: '2026-01-01T00:01:00.000Z' });
  t.true(stored.startsWith('<node '));
  t.deepEqual(parseMetadataElement(stored), base.metadata);
  t.is(startedAttribute(stored), '2026-01-01T00:01:00.000Z');
  t.is(parseMetadataElement('<other session="s" node="n"/>'), undefined);
  t.is(parseMetadataElement('<node session="s"/>'), undefined);
});

test('metadata under another namespace is not devpivot metadata', (t) => {
  t.is(parseMetadata('<x:node xmlns:x="https://example.com/ns" session="s" node="n"/>'), undefined);
  t.is(parseMetadata('<domain><name>devpivot-test-vm-foreign</name></domain>'), undefined);
});

test('names: domain, volume prefix unambiguous across sessions', (t) => {
  t.is(domainName('test-vm-1', 'node1'), 'devpivot-test-vm-1-node1');
  t.is(volumeName('a', 'n', 'qcow2'), 'devpivot-a--n.qcow2');
  // session "a" must not claim volumes of session "a-b"
  t.false(volumeName('a-b', 'n', 'qcow2').startsWith(volumePrefix('a')));
  t.true(validName('test-vm-1a2b'));
  for (const bad of ['', 'A', 'a--b', '-a', 'a-', 'a_b', 'a/b', 'x'.repeat(41)]) t.false(validName(bad), bad);
});

test('volume and pool XML', (t) => {
  const overlay = volumeXml({
    name: 'devpivot-s--n.qcow2',
    capacity: 10737418240,
    format: 'qcow2',
    backing: { path: '/pool/devpivot-base-0123456789abcdef.qcow2', format: 'qcow2' },
  });
  t.regex(overlay, /<capacity unit='bytes'>10737418240<\/capacity>/);
  t.regex(
    overlay,
    /<backingStore>\s*<path>\/pool\/devpivot-base-0123456789abcdef.qcow2<\/path>\s*<format type='qcow2'\/>/,
  );
  const data = volumeXml({ name: 'x.ign', capacity: 12, format: 'raw', mode: '0644' });
  t.regex(data, /<permissions><mode>0644<\/mode><\/permissions>/);
  t.notRegex(data, /backingStore/);
  const pool = poolXml('devpivot', '/var/lib/libvirt/images/devpivot');
  t.is(poolPath(pool), '/var/lib/libvirt/images/devpivot');
});

test("devpivot's guest network: slirp with the ssh forward on loopback, the NIC, the filter's chardevs", (t) => {
  const xml = domainXml({
    ...base,
    network: {
      sshPort: 40022,
      filter: { fromGuest: '/run/d/s1/a-g.sock', toHost: '/run/d/s1/a,h.sock', toGuest: '/r' },
    },
  });
  t.notRegex(xml, /<interface/, "libvirt's own interface is replaced");
  t.regex(xml, /xmlns:qemu=/);
  const args = [...xml.matchAll(/<qemu:arg value='([^']*)'\/>/g)].map((m) => m[1]);
  t.deepEqual(args, [
    '-netdev',
    'user,id=devpivot-net0,hostfwd=tcp:127.0.0.1:40022-:22',
    '-device',
    'virtio-net-pci,netdev=devpivot-net0,bus=pci.0,addr=0x1e',
    '-chardev',
    'socket,id=devpivot-from-guest,path=/run/d/s1/a-g.sock,reconnect=1',
    '-chardev',
    'socket,id=devpivot-to-host,path=/run/d/s1/a,,h.sock,reconnect=1',
    '-chardev',
    'socket,id=devpivot-to-guest,path=/r,reconnect=1',
    '-object',
    'filter-redirector,id=devpivot-filter,netdev=devpivot-net0,queue=rx,outdev=devpivot-from-guest,indev=devpivot-to-host',
    '-object',
    'filter-redirector,id=devpivot-reply,netdev=devpivot-net0,queue=tx,indev=devpivot-to-guest',
  ]);
  // with the old fw_cfg method both sets of arguments share the one qemu:commandline element
  const old = domainXml({ ...base, ignition: { ...base.ignition, method: 'qemu-commandline' }, network: {} });
  t.is(old.match(/<qemu:commandline>/g)?.length, 1);
  t.regex(old, /-fw_cfg[\s\S]*-netdev/);
});

test('the ssh forward is part of the metadata', (t) => {
  const meta = { ...base.metadata, ssh: '127.0.0.1:40022' };
  t.deepEqual(parseMetadataElement(metadataElement(meta)), meta);
  t.deepEqual(parseMetadata(domainXml({ ...base, metadata: meta })), meta);
  t.false('ssh' in parseMetadataElement(metadataElement(base.metadata))!, 'absent when the node has none');
});
