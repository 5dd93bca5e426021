/**
 * Boot the fixture OS under the real libvirtd (qemu:///system, TCG) straight from domain XML and virsh, without
 * src/vm: a transient domain `devpivot-test-images-<n>`, a qcow2 overlay and the Ignition file in
 * /var/lib/libvirt/images/devpivot-test/ (readable by libvirt-qemu), Ignition through fw_cfg
 * `opt/com.coreos/config`, user-mode virtio networking (10.0.2.2 = host loopback), serial console to a file.
 * Options: UEFI (OVMF, a per-VM NVRAM copy) instead of SeaBIOS, and a forward of 127.0.0.1:PORT to the guest's
 * port 22 (QEMU user networking `hostfwd`, loopback only: the VM layer has no port forward yet).
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const URI = 'qemu:///system';
export const TEST_ROOT = '/var/lib/libvirt/images/devpivot-test';

let counter = 0;

export interface ReportLine {
  event: string;
  [key: string]: unknown;
}

export interface ConsoleLine {
  /** Seconds since the domain was started (this boot session). */
  at: number;
  text: string;
}

function xmlEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/'/g, '&apos;');
}

export interface FixtureVmOptions {
  firmware?: 'bios' | 'uefi';
  /** Forward 127.0.0.1:sshPort to the guest's port 22. */
  sshPort?: number;
}

const OVMF_CODE = '/usr/share/OVMF/OVMF_CODE_4M.fd';
const OVMF_VARS = '/usr/share/OVMF/OVMF_VARS_4M.fd';

export class FixtureVm {
  readonly name: string;
  readonly dir: string;
  readonly options: FixtureVmOptions;
  private session = 0;
  private startedAt = 0;

  private constructor(name: string, dir: string, options: FixtureVmOptions) {
    this.name = name;
    this.dir = dir;
    this.options = options;
  }

  /** A new overlay of `baseDisk` and the Ignition config; nothing runs yet. */
  static async create(baseDisk: string, ignition: string, options: FixtureVmOptions = {}): Promise<FixtureVm> {
    counter += 1;
    const name = `devpivot-test-images-${process.pid}-${counter}`;
    const dir = join(TEST_ROOT, name);
    await mkdir(TEST_ROOT, { recursive: true });
    await chmod(TEST_ROOT, 0o755);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { mode: 0o755 });
    await chmod(dir, 0o755);
    await exec('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', baseDisk, '-F', 'qcow2', join(dir, 'disk.qcow2')]);
    await writeFile(join(dir, 'config.ign'), ignition, { mode: 0o644 });
    if (options.firmware === 'uefi') {
      await writeFile(join(dir, 'vars.fd'), await readFile(OVMF_VARS), { mode: 0o644 });
    }
    return new FixtureVm(name, dir, options);
  }

  get consoleLog(): string {
    return join(this.dir, `console-${this.session}.log`);
  }

  /** Start (or, after destroy(), start again on the same disk) with a fresh console log. */
  async start(): Promise<void> {
    this.session += 1;
    const uefi = this.options.firmware === 'uefi';
    const os = uefi
      ? `<os><type arch='x86_64' machine='q35'>hvm</type>
    <loader readonly='yes' type='pflash'>${OVMF_CODE}</loader>
    <nvram>${xmlEscape(join(this.dir, 'vars.fd'))}</nvram>
    <boot dev='hd'/></os>`
      : `<os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>`;
    // With an ssh forward the NIC is QEMU's own (libvirt 9 forwards ports only with passt), at a fixed slot that
    // libvirt's own address assignment leaves free.
    const nic = this.options.sshPort ? '' : `<interface type='user'><model type='virtio'/></interface>`;
    const nicArgs = this.options.sshPort
      ? `
    <qemu:arg value='-netdev'/>
    <qemu:arg value='user,id=fixturenet,hostfwd=tcp:127.0.0.1:${this.options.sshPort}-:22'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='virtio-net-pci,netdev=fixturenet,bus=${uefi ? 'pcie.0' : 'pci.0'},addr=0x10'/>`
      : '';
    const xml = `<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>${this.name}</name>
  <memory unit='MiB'>1024</memory>
  <vcpu>1</vcpu>
  ${os}
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source file='${xmlEscape(join(this.dir, 'disk.qcow2'))}'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    ${nic}
    <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>
    <serial type='file'><source path='${xmlEscape(this.consoleLog)}'/><target port='0'/></serial>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-fw_cfg'/>
    <qemu:arg value='name=opt/com.coreos/config,file=${xmlEscape(join(this.dir, 'config.ign'))}'/>${nicArgs}
  </qemu:commandline>
</domain>
`;
    const xmlPath = join(this.dir, 'domain.xml');
    await writeFile(xmlPath, xml);
    this.startedAt = Date.now();
    await exec('virsh', ['-c', URI, 'create', xmlPath]);
  }

  /** Power off hard (`virsh destroy`); never throws. */
  async destroy(): Promise<void> {
    await exec('virsh', ['-c', URI, 'destroy', this.name]).catch(() => {});
  }

  /** Destroy and remove the overlay, Ignition file and logs. */
  async dispose(): Promise<void> {
    await this.destroy();
    if (!process.env.KEEP_TEST_VM) await rm(this.dir, { recursive: true, force: true });
  }

  /** Complete console lines of the current session so far (CR and terminal escapes removed). */
  async lines(): Promise<string[]> {
    let text = '';
    try {
      text = await readFile(this.consoleLog, 'latin1');
    } catch {
      return [];
    }
    const lines = text
      .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
      .replace(/\r/g, '')
      .split('\n');
    lines.pop(); // a partial line
    return lines;
  }

  /** The `devpivot-report:` lines parsed (throws on invalid JSON: the guest must print valid lines). */
  async reports(): Promise<ReportLine[]> {
    return (await this.lines())
      .map((line) => /devpivot-report: (.*)$/.exec(line)?.[1])
      .filter((json): json is string => json !== undefined)
      .map((json) => JSON.parse(json) as ReportLine);
  }

  /**
   * Wait until a console line of this session matches `pattern` (searching from line `from`). Returns the line,
   * its index and the seconds since start. Throws with the console tail on timeout.
   */
  async waitFor(
    pattern: RegExp,
    timeoutMs: number,
    from = 0,
  ): Promise<{ line: string; index: number; seconds: number }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const lines = await this.lines();
      for (let index = from; index < lines.length; index++) {
        if (pattern.test(lines[index]!))
          return { line: lines[index]!, index, seconds: (Date.now() - this.startedAt) / 1000 };
      }
      if (Date.now() > deadline) {
        throw new Error(
          `${this.name}: no console line matching ${pattern} within ${timeoutMs / 1000} s; last lines:\n${lines.slice(-25).join('\n')}`,
        );
      }
      await sleep(200);
    }
  }

  /** Seconds since the current session started. */
  elapsed(): number {
    return (Date.now() - this.startedAt) / 1000;
  }
}
