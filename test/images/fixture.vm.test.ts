/**
 * The fixture OS under real libvirtd (TCG), with devpivot's legacy Ignition: first-boot Ignition from fw_cfg,
 * systemd running the units Ignition wrote, openshift/pivot's protocol (origin comparison, staged deployment
 * finalized at shutdown, reboot only through mcd-write-pivot-reboot.service), the kernel-args whitelist, pull
 * failures, and power loss around the bootloader swap (with both ostreedev/ostree#3392 fixes, with one, with none),
 * UEFI and ssh. About 15 minutes on an idle host; the domains are destroyed by exact name in `finally`.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { freeLoopbackPort } from '../../src/core/free-port.js';
import { generateIgnition, type IgnitionConfig, serializeIgnition } from '../../src/ignition/index.js';
import { type Fixture, loadFixture } from '../../src/images/fixture.js';
import { buildOscontainer, pushOscontainer } from '../../src/oscontainer/index.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/index.js';
import { FixtureVm, type FixtureVmOptions, type ReportLine } from '../helpers/fixture-vm.js';

const exec = promisify(execFile);
const BOOT_S = 180_000;
const PIVOT_S = 240_000;

let fixture: Fixture;
let registry: RunningRegistry;
let storage: string;
/** Image references as the guest reaches them (10.0.2.2 = host loopback). */
const pinned: Record<string, string> = {};

test.before(async () => {
  fixture = await loadFixture();
  storage = await mkdtemp(join(tmpdir(), 'devpivot-images-vm-'));
  registry = await startRegistry({ storage });
  for (const entry of fixture.versions) {
    const image = await buildOscontainer({ repo: fixture.repo, commit: entry.commit });
    try {
      const pushed = await pushOscontainer(image, `${registry.address}/fixture/os:v${entry.version}`);
      pinned[entry.version] = `10.0.2.2:${registry.port}/fixture/os@${pushed.digest}`;
    } finally {
      await image.dispose();
    }
  }
});

test.after.always(async () => {
  await registry?.stop();
  if (storage) await rm(storage, { recursive: true, force: true });
});

interface Extra {
  files?: Array<{ path: string; text: string }>;
  units?: Array<{ name: string; enabled?: boolean; contents: string }>;
  kernelArgs?: string[];
  sshKeys?: string[];
  trust?: boolean;
}

function configFor(target: string, extra: Extra = {}): IgnitionConfig {
  return generateIgnition({
    driver: 'legacy',
    image: target,
    spec: '3.3.0',
    ...(extra.trust === false ? {} : { registry: { hostPort: `10.0.2.2:${registry.port}`, insecure: true } }),
    kernelArgs: extra.kernelArgs ?? [],
    ...(extra.sshKeys ? { sshKeys: extra.sshKeys } : {}),
    extra: {
      ignition: { version: '3.3.0' },
      storage: {
        files: (extra.files ?? []).map((file) => ({
          path: file.path,
          mode: 0o644,
          overwrite: true, // /etc/issue exists in the image, as on RHCOS
          contents: { source: `data:,${encodeURIComponent(file.text)}` },
        })),
      },
      systemd: { units: extra.units ?? [] },
    },
  });
}

const ignitionFor = (target: string, extra: Extra = {}) => serializeIgnition(configFor(target, extra));

function commitOf(version: string): string {
  return fixture.versions.find((entry) => entry.version === version)!.commit;
}

const booted = (reports: ReportLine[]) => reports.filter((report) => report.event === 'booted');
const glog = (level: string, file: string, text: string) =>
  new RegExp(`pivot\\[\\d+\\]: ${level}\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} +\\d+ ${file}\\] ${text}`);
const BOOTED = /devpivot-report: \{"event":"booted"/;
/** The boot image's own origin: RHCOS images carry `pivot://<oscontainer>`, the fixture's v1 names its commit. */
const bootImage = () => `fixture.invalid/fixture-coreos@sha256:${commitOf('1')}`;

async function withVm(
  t: { log: (s: string) => void },
  ignition: string,
  options: FixtureVmOptions,
  body: (vm: FixtureVm) => Promise<void>,
) {
  const vm = await FixtureVm.create(fixture.disk, ignition, options);
  try {
    await body(vm);
  } catch (error) {
    const lines = await vm.lines();
    // What the update tools and the shutdown said over the whole session, then the console's end.
    const key = /pivot\[|ostree|fixture-|rpm-ostree|bootc|FAILED|Booting `|reboot|Ignition/;
    const keyLines = lines.filter((line) => key.test(line)).slice(-80);
    t.log(`key lines:\n${keyLines.join('\n')}`);
    t.log(lines.slice(-60).join('\n'));
    throw error;
  } finally {
    await vm.dispose();
  }
}

test.serial(
  'first boot: Ignition, then systemd runs the units it wrote; pivot stages v2, finalized at shutdown, one reboot',
  async (t) => {
    const marker = `devpivot-images-test-${process.pid}-${Date.now()}`;
    const target = pinned['2']!;
    const ignition = ignitionFor(target, {
      files: [{ path: '/etc/issue', text: `${marker}\n` }],
      kernelArgs: ['ADD:nosmt', 'ADD:fixture.test-karg=1', 'DELETE:quiet'],
    });
    await withVm(t, ignition, {}, async (vm) => {
      await vm.start();
      const ignitionDone = await vm.waitFor(/Reached target ignition-complete\.target - Ignition Complete\./, BOOT_S);
      await vm.waitFor(/systemd\[1\]: Detected first boot\./, BOOT_S, ignitionDone.index);
      // Units Ignition wrote run under systemd: the report (enabled through 20-ignition.preset) and the MCS's unit.
      const booted1 = await vm.waitFor(BOOTED, BOOT_S, ignitionDone.index);
      t.log(`booted version 1 after ${booted1.seconds.toFixed(1)} s`);
      await vm.waitFor(/Started mcd-write-pivot-reboot\.service/, BOOT_S, ignitionDone.index);
      const pulling = await vm.waitFor(glog('I', 'run.go:16', `Running: podman pull -q ${target}$`), PIVOT_S);
      await vm.waitFor(glog('I', 'root.go:263', `Previous pivot: ${bootImage()}$`), 1000);
      const pivoting = await vm.waitFor(glog('I', 'root.go:333', 'Pivoting to: '), PIVOT_S, pulling.index);
      t.regex(pivoting.line, new RegExp(`Pivoting to: 2 \\(${commitOf('2')}\\)$`));
      await vm.waitFor(/pivot\[\d+\]: Staging deployment\.\.\.done/, PIVOT_S, pivoting.index);
      // The whitelist: nosmt is applied (rpm-ostree kargs), the other ADD is refused, the DELETE of an argument not
      // on the command line is skipped.
      await vm.waitFor(glog('I', 'root.go:134', 'fixture\\.test-karg=1 not a whitelisted kernel argument$'), 60_000);
      await vm.waitFor(glog('I', 'root.go:151', 'quiet not a whitelisted kernel argument$'), 60_000);
      await vm.waitFor(glog('I', 'run.go:16', 'Running: rpm-ostree kargs --append=nosmt$'), 60_000);
      const reboot = await vm.waitFor(glog('I', 'run.go:16', 'Running: systemctl reboot$'), 60_000);
      // ostree's own unit writes the staged deployment at shutdown, merging /etc then.
      await vm.waitFor(/ostree\[\d+\]: Copying \/etc changes: /, 120_000, reboot.index);
      await vm.waitFor(/ostree\[\d+\]: Transaction complete; bootconfig swap: yes/, 120_000, reboot.index);
      const restart = await vm.waitFor(/reboot: Restarting system/, 120_000, reboot.index);
      const booted2 = await vm.waitFor(BOOTED, BOOT_S, restart.index);
      t.log(`pivot v1 -> v2: pulling at ${pulling.seconds.toFixed(1)} s, booted v2 at ${booted2.seconds.toFixed(1)} s`);
      await vm.waitFor(/Started ssh\.service - OpenBSD Secure Shell server\./, BOOT_S, restart.index);
      await new Promise((resolve) => setTimeout(resolve, 15_000));

      const lines = await vm.lines();
      const second = lines.slice(restart.index);
      // The Ignition-written /etc/issue is shown by the serial getty on both boots (and was merged into v2's /etc).
      t.true(lines.slice(0, restart.index).includes(marker), 'getty shows /etc/issue on boot 1');
      t.true(second.includes(marker), 'getty shows /etc/issue on boot 2');
      // Boot 2: not a first boot (the machine-id was committed and merged), Ignition does not run, the pullspec
      // was deleted before the /etc merge: pivot.service's condition fails and nothing pivots again.
      t.false(second.some((line) => /Detected first boot|mcd-write-pivot-reboot|ignition-complete/.test(line)));
      t.false(
        second.some((line) => /pivot\[\d+\]/.test(line)),
        'pivot does not run on the new deployment',
      );
      const cmdlines = lines.filter((line) => /\] Command line: /.test(line));
      t.is(cmdlines.length, 2);
      t.false(cmdlines[0]!.includes(' nosmt'));
      t.true(cmdlines[1]!.includes(' nosmt'), cmdlines[1]);
      t.false(cmdlines[1]!.includes('fixture.test-karg'), cmdlines[1]);

      const boots = booted(await vm.reports());
      t.is(boots.length, 2);
      t.like(boots[0], { version: '1', commit: commitOf('1'), image: bootImage() });
      t.like(boots[1], { version: '2', commit: commitOf('2'), image: target });
      for (const boot of boots) t.regex(String(boot.bootId), /^[0-9a-f-]{36}$/);
      t.not(boots[0]!.bootId, boots[1]!.bootId);
    });
  },
);

test.serial(
  'without mcd-write-pivot-reboot.service the deployment is staged and the node does not reboot',
  async (t) => {
    const config = configFor(pinned['2']!);
    const systemd = config.systemd as { units: Array<{ name: string }> };
    systemd.units = systemd.units.filter((unit) => unit.name !== 'mcd-write-pivot-reboot.service');
    await withVm(t, serializeIgnition(config), {}, async (vm) => {
      await vm.start();
      const staged = await vm.waitFor(/pivot\[\d+\]: Staging deployment\.\.\.done/, PIVOT_S);
      // pivot's last line (the kernel-args check): systemd prints no status line once the boot transaction is over
      const done = await vm.waitFor(glog('I', 'root.go:402', 'unable to parse tuning file '), 60_000, staged.index);
      await new Promise((resolve) => setTimeout(resolve, 30_000));
      const after = (await vm.lines()).slice(done.index);
      t.false(after.some((line) => /Running: systemctl reboot|reboot: Restarting system/.test(line)));
      t.deepEqual(
        booted(await vm.reports()).map((report) => report.version),
        ['1'],
      );
    });
  },
);

test.serial('a pullspec equal to the booted origin: "Already at target pivot", no pull, no reboot', async (t) => {
  await withVm(t, ignitionFor(bootImage()), {}, async (vm) => {
    await vm.start();
    await vm.waitFor(glog('I', 'root.go:415', 'Already at target pivot; exiting\\.\\.\\.$'), PIVOT_S);
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const lines = await vm.lines();
    t.false(lines.some((line) => /Running: podman pull/.test(line)));
    t.false(lines.some((line) => /Running: systemctl reboot/.test(line)));
    t.is(booted(await vm.reports()).length, 1);
  });
});

test.serial('a corrupted layer: podman pull fails digest verification and is retried, nothing is staged', async (t) => {
  registry.faults.corruptBlobs = true;
  try {
    await withVm(t, ignitionFor(pinned['3']!), {}, async (vm) => {
      await vm.start();
      const error = await vm.waitFor(/pivot\[\d+\]: Error: error pulling image .*Digest did not match/, PIVOT_S);
      await vm.waitFor(
        glog('W', 'run.go:40', 'podman failed: exit status 125; retrying\\.\\.\\.$'),
        30_000,
        error.index,
      );
      // The second try 5 s later (k8s wait.ExponentialBackoff: 5 s, then 10, 20, 40, 80 before the fatal error).
      await vm.waitFor(glog('I', 'run.go:16', 'Running: podman pull'), 60_000, error.index);
      t.false((await vm.lines()).some((line) => /Pivoting to|Staging deployment/.test(line)));
      t.deepEqual(
        booted(await vm.reports()).map((report) => report.version),
        ['1'],
      );
    });
  } finally {
    registry.faults.corruptBlobs = false;
  }
});

test.serial(
  'without a registries.conf.d drop-in the plain-HTTP registry is refused (TLS is not skipped)',
  async (t) => {
    await withVm(t, ignitionFor(pinned['2']!, { trust: false }), {}, async (vm) => {
      await vm.start();
      const error = await vm.waitFor(/pivot\[\d+\]: Error: error pulling image /, PIVOT_S);
      t.regex(error.line, /HTTP response to HTTPS client/);
      await vm.waitFor(
        glog('W', 'run.go:40', 'podman failed: exit status 125; retrying\\.\\.\\.$'),
        30_000,
        error.index,
      );
    });
  },
);

test.serial('an Ignition config the guest cannot use stops the first boot as RHCOS does', async (t) => {
  await withVm(t, '{"ignition":{"version":"9.9.0"}}', {}, async (vm) => {
    await vm.start();
    const failed = await vm.waitFor(/^Ignition has failed/, BOOT_S);
    await vm.waitFor(/^You are in emergency mode/, BOOT_S, failed.index);
    const lines = await vm.lines();
    t.true(lines.some((line) => /^\[FAILED\] Failed to start ignition-fetch\.service/.test(line)));
    t.true(
      lines.some((line) => /^ignition: CRITICAL : Ignition failed: unsupported config version/.test(line)),
      'the Ignition error is shown',
    );
    t.false(
      lines.some((line) => /systemd\[1\]/.test(line)),
      'the root is never started',
    );
  });
});

/** A unit that is slow to stop after ostree-finalize-staged.service (stop order is the reverse of Before=). */
const SLOW_STOP = {
  name: 'devpivot-test-slow-stop.service',
  enabled: true,
  contents: [
    '[Unit]',
    'Description=devpivot test: keep the shutdown going after the staged deployment is written',
    'Before=ostree-finalize-staged.service',
    'RequiresMountsFor=/boot',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    'ExecStart=/bin/true',
    'ExecStop=/bin/sleep 120',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n'),
};

/** Pivot to v2, cut the power after finalize-staged swapped /boot/loader (before /boot is unmounted), boot again. */
async function powerLossAfterSwap(vm: FixtureVm) {
  await vm.start();
  const staged = await vm.waitFor(/pivot\[\d+\]: Staging deployment\.\.\.done/, PIVOT_S + 120_000);
  // The swap is on disk once the checkpoint ExecStop said so (or skipped it), or systemd's status line says the
  // unit stopped (its name cut to fit 80 columns, as on RHCOS). Two triggers: a kernel or journal line written at
  // the same moment can split either one on the serial console, and a missed trigger lets the shutdown finish.
  const finalized = await vm.waitFor(
    /Stopped ostree-finalize-st(?!.*Monitor)|^fixture-boot-checkpoint: |Failed to stop ostree-finalize-st|Booting `/,
    PIVOT_S,
    staged.index,
  );
  if (!/^fixture-boot-checkpoint: |Stopped/.test(finalized.line)) {
    throw new Error(`the shutdown went on without the bootloader swap being seen: ${finalized.line}`);
  }
  await vm.destroy();
  await vm.start();
  const outcome = await vm.waitFor(
    /devpivot-report: \{"event":"booted"|You are in emergency mode|Kernel panic|^error: |Minimal BASH-like/,
    BOOT_S,
  );
  return { cutAt: finalized.seconds, outcome: outcome.line, reports: await vm.reports(), lines: await vm.lines() };
}

test.serial('power loss right after the deployment is staged: the node boots v1, never a brick', async (t) => {
  await withVm(t, ignitionFor(pinned['2']!), {}, async (vm) => {
    await vm.start();
    await vm.waitFor(/pivot\[\d+\]: Staging deployment\.\.\.done/, PIVOT_S);
    await vm.destroy();
    await vm.start();
    const outcome = await vm.waitFor(BOOTED, BOOT_S);
    t.log(`next boot: ${outcome.line}`);
    // The staged deployment lived in /run: the node boots the old one (it pivots again only if the pullspec's
    // deletion had not reached the disk).
    t.like(booted(await vm.reports())[0], { version: '1', commit: commitOf('1') });
  });
});

test.serial('power loss after the bootloader swap, fixes on: the /boot checkpoint makes v2 boot', async (t) => {
  await withVm(t, ignitionFor(pinned['2']!, { units: [SLOW_STOP] }), {}, async (vm) => {
    const { cutAt, outcome, reports } = await powerLossAfterSwap(vm);
    t.log(`power cut ${cutAt.toFixed(1)} s after start; next boot: ${outcome}`);
    t.like(booted(reports)[0], { version: '2', commit: commitOf('2') });
  });
});

test.serial('with the boot fixes off, power loss after the swap reproduces ostreedev/ostree#3392', async (t) => {
  const ignition = ignitionFor(pinned['2']!, {
    units: [SLOW_STOP],
    files: [{ path: '/etc/fixture/no-boot-fixes', text: 'ostreedev/ostree#3392\n' }],
  });
  await withVm(t, ignition, {}, async (vm) => {
    const { cutAt, outcome } = await powerLossAfterSwap(vm);
    t.log(`power cut ${cutAt.toFixed(1)} s after start; next boot: ${outcome}`);
    t.regex(outcome, /You are in emergency mode.*does not resolve to a deployment.*3392/);
  });
});

test.serial('with only the /boot checkpoint off, the initramfs falls back to the newest BLS entry', async (t) => {
  const ignition = ignitionFor(pinned['2']!, {
    units: [SLOW_STOP],
    files: [{ path: '/etc/fixture/no-boot-fixes', text: 'fsfreeze\n' }],
  });
  await withVm(t, ignition, {}, async (vm) => {
    const { cutAt, outcome, reports, lines } = await powerLossAfterSwap(vm);
    t.log(`power cut ${cutAt.toFixed(1)} s after start; next boot: ${outcome}`);
    t.true(
      lines.some((line) =>
        /^fixture-initramfs: warning: ostree=\S+ does not resolve \(ostreedev\/ostree#3392\)/.test(line),
      ),
      'the fallback was needed: the #3392 state was reached',
    );
    t.like(booted(reports)[0], { version: '2', commit: commitOf('2') });
  });
});

test.serial(
  'UEFI (OVMF) boots the same disk, pivots to v2, and ssh reaches the core user Ignition created',
  async (t) => {
    const keys = await mkdtemp(join(tmpdir(), 'devpivot-images-ssh-'));
    try {
      await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'devpivot-test', '-f', join(keys, 'id')]);
      const publicKey = (await readFile(join(keys, 'id.pub'), 'utf8')).trim();
      const port = await freeLoopbackPort();
      const target = pinned['2']!;
      await withVm(
        t,
        ignitionFor(target, { sshKeys: [publicKey] }),
        { firmware: 'uefi', sshPort: port },
        async (vm) => {
          await vm.start();
          const grub = await vm.waitFor(/fixture-grub: loading \/syslinux\/syslinux\.cfg/, BOOT_S);
          const restart = await vm.waitFor(/reboot: Restarting system/, PIVOT_S + BOOT_S, grub.index);
          await vm.waitFor(BOOTED, BOOT_S, restart.index);
          t.deepEqual(
            booted(await vm.reports()).map((report) => report.version),
            ['1', '2'],
          );
          const ssh = (command: string) =>
            exec('ssh', [
              ...['-i', join(keys, 'id'), '-p', String(port), '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=20'],
              ...['-o', 'StrictHostKeyChecking=no', '-o', `UserKnownHostsFile=${join(keys, 'known_hosts')}`],
              'core@127.0.0.1',
              command,
            ]);
          // sshd may still be starting: retry the connection for a while
          let result: { stdout: string } | undefined;
          for (let attempt = 0; attempt < 24 && !result; attempt++) {
            result = await ssh('id -un; grep ^VERSION= /etc/os-release; cat ~/.ssh/authorized_keys.d/ignition').catch(
              async () => {
                await new Promise((resolve) => setTimeout(resolve, 5000));
                return undefined;
              },
            );
          }
          const stdout = result?.stdout ?? '';
          t.deepEqual(stdout.trim().split('\n'), ['core', 'VERSION="2"', publicKey]);
          await t.throwsAsync(
            exec('ssh', [
              ...[
                '-p',
                String(port),
                '-o',
                'BatchMode=yes',
                '-o',
                'StrictHostKeyChecking=no',
                '-o',
                'IdentitiesOnly=yes',
              ],
              ...['-o', `UserKnownHostsFile=${join(keys, 'known_hosts')}`, '-o', 'PubkeyAuthentication=no'],
              'core@127.0.0.1',
              'true',
            ]),
            undefined,
            'no password logins',
          );
        },
      );
    } finally {
      await rm(keys, { recursive: true, force: true });
    }
  },
);
