/**
 * The VM layer against real libvirt daemons: the shared system daemon (qemu:///system) for the main boot, and a
 * private session-mode libvirtd (see daemon.ts) for the remote protocol path and every destructive command, so
 * `down --all` can never touch another engineer's VMs. Guests: see guest.ts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { DevpivotEvent, EventOf, Stamped } from '../../src/core/events.js';
import { DEVPIVOT_XMLNS, volumePrefix } from '../../src/vm/domain-xml.js';
import type { NodeSpec } from '../../src/vm/index.js';
import { Connection } from '../../src/vm/libvirt/connection.js';
import { LibvirtError, openHost } from '../../src/vm/libvirt/index.js';
import { listDevpivotVolumes } from '../../src/vm/libvirt/inventory.js';
import { binPath, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { startTestDaemon, type TestDaemon } from './daemon.js';
import { buildTestGuest } from './guest.js';

const guest = buildTestGuest();
let daemon: TestDaemon;

test.before(async () => {
  daemon = await startTestDaemon();
});

test.after.always(async () => {
  await daemon?.dispose();
});

const session = (tag: string) => `test-vm-${tag}-${randomBytes(3).toString('hex')}`;

/** The test guest as node n1: direct kernel boot, 256 MiB, BIOS; `cmdline` is added to the guest's own. */
function guestNode(options: Partial<NodeSpec> & { cmdline?: string } = {}): NodeSpec {
  const { cmdline, ...spec } = options;
  return {
    name: 'n1',
    image: guest.baseImage,
    ignition: '{}',
    memoryMiB: 256,
    vcpus: 1,
    firmware: 'bios',
    kernel: {
      path: guest.kernel,
      initrd: guest.initrd,
      cmdline: cmdline ? `${guest.cmdline} ${cmdline}` : guest.cmdline,
    },
    ...spec,
  };
}

/** A host on the private daemon (its own pool), with a fresh state directory. */
function privateHost(bus: EventBus, sessionId: string, stateDir = tempDir('dp-')) {
  return openHost({ uri: daemon.tcpUri, sessionId, bus, stateDir, poolPath: daemon.poolPath });
}

function recorder(bus: EventBus) {
  const events: Stamped[] = [];
  bus.subscribe((event) => events.push(event));
  const waitFor = <K extends DevpivotEvent['kind']>(
    kind: K,
    match: (event: Stamped<EventOf<K>>) => boolean,
    timeoutMs: number,
  ): Promise<Stamped<EventOf<K>>> => {
    const seen = events.find((e) => e.kind === kind && match(e as Stamped<EventOf<K>>));
    if (seen) return Promise.resolve(seen as Stamped<EventOf<K>>);
    return bus.once(kind, match, AbortSignal.timeout(timeoutMs)).catch(() => {
      const tail = events
        .slice(-15)
        .map((e) => `${e.kind} ${JSON.stringify(e)}`)
        .join('\n');
      throw new Error(`no ${kind} within ${timeoutMs} ms; last events:\n${tail}`);
    });
  };
  return { events, waitFor };
}

async function nothingLeft(t: ExecutionContext, uri: string, sessionId: string, domain: string): Promise<void> {
  const conn = await Connection.open(uri);
  try {
    const left = await conn.lookupDomain(domain);
    left?.free();
    t.is(left, undefined, `domain ${domain} is gone`);
    const volumes = (await listDevpivotVolumes(conn)).filter((v) => v.name.startsWith(volumePrefix(sessionId)));
    t.deepEqual(volumes, [], 'no volume of the session is left');
  } finally {
    await conn.close();
  }
}

/**
 * Hold devpivot's libvirt calls (one at a time, src/vm/libvirt/call.ts) for `ms`, as a daemon slow to answer does
 * on a loaded host: a connection to a unix socket that accepts and never answers, ended after `ms`.
 */
async function holdLibvirtCalls(ms: number): Promise<void> {
  const path = join(tempDir('devpivot-test-hold-'), 'sock');
  const sockets: Socket[] = [];
  const server = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  const open = Connection.open(`qemu+unix:///system?socket=${path}`).then(
    (conn) => conn.close(),
    () => {},
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  for (const socket of sockets) socket.destroy();
  server.close();
  await open;
}

interface BootFigures {
  createMs: number;
  firstLineMs: number;
  rebootEventVsLineMs: number;
  ticks: number;
  expectedTicks: number;
}

/** Create, boot, see console lines and Ignition content, see the guest reboot itself, destroy, check nothing left. */
async function bootAndReboot(
  t: ExecutionContext,
  uri: string,
  options: { poolPath?: string; interactive?: boolean; holdCallsMs?: number } = {},
): Promise<BootFigures> {
  const bus = new EventBus();
  const { events, waitFor } = recorder(bus);
  const stateDir = tempDir('devpivot-test-vm-state-');
  const sessionId = session('boot');
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 50);
  const host = await openHost({ uri, sessionId, bus, stateDir, poolPath: options.poolPath });
  try {
    const token = randomBytes(6).toString('hex');
    const t0 = Date.now();
    const node = await host.createNode(
      guestNode({ ignition: JSON.stringify({ ignition: { version: '3.3.0' }, token }) }),
    );
    const createMs = Date.now() - t0;
    t.is(node.domain, `devpivot-${sessionId}-n1`);
    await waitFor('vm.defined', (e) => e.node === 'n1', 1000);
    await node.start();
    await waitFor('vm.started', (e) => e.domain === node.domain, 10_000);
    const first = await waitFor('vm.console', (e) => e.node === 'n1', 60_000);
    const ignition = await waitFor('vm.console', (e) => e.line.startsWith('devpivot-test: ignition'), 90_000);
    t.true(ignition.line.includes(token), 'the Ignition config arrived through fw_cfg');
    const rebootLine = await waitFor('vm.console', (e) => e.line === 'devpivot-test: rebooting', 30_000);
    // devpivot's calls held while the guest resets: the reset must not boot the guest in the old process meanwhile
    // (the guest would run its firmware and boot twice: on a real node, GRUB would count two boot attempts).
    const held = options.holdCallsMs ? holdLibvirtCalls(options.holdCallsMs) : undefined;
    const reboot = await waitFor('vm.reboot', (e) => e.domain === node.domain, 30_000);
    if (held) {
      await held;
      const booted = events.filter(
        (e) => e.kind === 'vm.console' && e.at > rebootLine.at && /init started/.test(e.line),
      );
      t.deepEqual(booted, [], 'no boot after the reset while devpivot could not restart the node (15 s held)');
    }
    await waitFor('vm.console', (e) => e.line === 'devpivot-test: second boot', 90_000);
    t.is(events.filter((e) => e.kind === 'vm.reboot').length, 1, 'one guest reboot is one vm.reboot');
    t.false(
      events.some((e) => e.kind === 'vm.stopped'),
      'a guest reboot is not a stop',
    );

    if (options.interactive) await interactiveConsole(t, uri, sessionId, stateDir);

    const log = readFileSync(node.consoleLog, 'utf8');
    t.true(log.includes('devpivot-test: init started'), 'the canonical console log has the guest lines');
    t.false(log.includes('\x1b'), 'and no escape sequences');

    const logs = await runCli(['logs', 'n1'], { env: { DEVPIVOT_STATE_DIR: stateDir } });
    t.is(logs.code, 0, logs.stderr);
    t.regex(logs.stdout, /devpivot-test: rebooting\n[\s\S]*devpivot-test: second boot/);
    if (options.interactive) await followLogs(t, sessionId, stateDir);

    const ps = await runCli(['ps', '--json', '--connect', uri], { env: { DEVPIVOT_STATE_DIR: stateDir } });
    t.is(ps.code, 0, ps.stderr);
    const row = (JSON.parse(ps.stdout) as { name: string; session: string; state: string; uptime: string }[]).find(
      (r) => r.name === node.domain,
    );
    t.like(row, { session: sessionId, state: 'running' });
    t.regex(row?.uptime ?? '', /^\d+(s|m)/);

    // pause: the CPU stops, the domain stays (paused); again is a no-op; a paused node powers off as a running one
    await node.pause();
    await node.pause();
    const paused = await runCli(['ps', '--json', '--connect', uri], { env: { DEVPIVOT_STATE_DIR: stateDir } });
    t.like(
      (JSON.parse(paused.stdout) as { name: string; state: string }[]).find((r) => r.name === node.domain),
      { state: 'paused' },
    );
    await node.powerOff();
    const stopped = await waitFor('vm.stopped', (e) => e.domain === node.domain, 20_000);
    t.is(stopped.reason, 'destroyed');
    await node.destroy();
    await host.destroyAll();
    t.is(
      events.filter((e) => e.kind === 'vm.console' && e.line === 'devpivot-test: init started').length,
      2,
      'the guest booted twice: before its reboot and once after it',
    );
    const elapsed = Date.now() - t0;
    return {
      createMs,
      firstLineMs: first.at - t0,
      rebootEventVsLineMs: reboot.at - rebootLine.at,
      ticks,
      expectedTicks: Math.floor(elapsed / 50),
    };
  } finally {
    clearInterval(ticker);
    await host.destroyAll();
    await host.close();
    await nothingLeft(t, uri, sessionId, `devpivot-${sessionId}-n1`);
  }
}

/** `devpivot logs -f` prints what is there, keeps following, and ends cleanly on Ctrl-C (SIGINT). */
async function followLogs(t: ExecutionContext, sessionId: string, stateDir: string) {
  const child = spawn(process.execPath, [binPath, 'logs', 'n1', '-f', '--session', sessionId], {
    env: { ...process.env, DEVPIVOT_STATE_DIR: stateDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const deadline = Date.now() + 10_000;
  while (!out.includes('second boot') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.regex(out, /second boot/);
  await new Promise((r) => setTimeout(r, 500));
  t.is(child.exitCode, null, 'still following');
  child.kill('SIGINT');
  t.is(await exited, 0);
}

/** `devpivot console --force`: type into the guest's shell, read its answer, Ctrl-] detaches. */
async function interactiveConsole(t: ExecutionContext, uri: string, sessionId: string, stateDir: string) {
  const child: ChildProcess = spawn(
    process.execPath,
    [binPath, 'console', 'n1', '--force', '--session', sessionId, '--connect', uri],
    { env: { ...process.env, DEVPIVOT_STATE_DIR: stateDir }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const deadline = Date.now() + 30_000;
  while (!err.includes('Escape character') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  // the shell may still be starting: repeat the command until its answer shows up
  while (!out.includes('devpivot-42') && Date.now() < deadline) {
    child.stdin!.write('echo devpivot-$((6*7))\r');
    await new Promise((r) => setTimeout(r, 1500));
  }
  t.true(out.includes('devpivot-42'), `console round trip; got: ${out.slice(-300)} / ${err}`);
  child.stdin!.write(Buffer.from([0x1d]));
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  t.is(await exited, 0, err);
  clearTimeout(timer);
  t.regex(err, /Detached/);
  // the run's own console reader takes the console back: a polite attach is now refused as busy
  let busy = '';
  for (let i = 0; i < 10 && !busy.includes('CONSOLE_BUSY'); i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const again = await runCli(['console', 'n1', '--session', sessionId, '--connect', uri], {
      env: { DEVPIVOT_STATE_DIR: stateDir },
      timeoutMs: 15_000,
    });
    busy = again.stderr;
  }
  t.regex(busy, /CONSOLE_BUSY/);
}

test.serial('system daemon: boot an overlay with Ignition, console lines, guest reboot event, destroy', async (t) => {
  const figures = await bootAndReboot(t, 'qemu:///system', { interactive: true, holdCallsMs: 15_000 });
  t.log(`create (volumes + define): ${figures.createMs} ms`);
  t.log(`create -> first console line: ${figures.firstLineMs} ms`);
  t.log(`vm.reboot event minus the guest's "rebooting" console line: ${figures.rebootEventVsLineMs} ms`);
  t.log(`main thread: ${figures.ticks} ticks of 50 ms for ${figures.expectedTicks} expected`);
  t.true(figures.ticks >= figures.expectedTicks * 0.8, 'the main thread stays responsive during the boot');
});

test.serial('system daemon, UEFI (OVMF): boots, and its NVRAM file goes with the domain', async (t) => {
  const bus = new EventBus();
  const { waitFor } = recorder(bus);
  const sessionId = session('uefi');
  const host = await openHost({ uri: 'qemu:///system', sessionId, bus, stateDir: tempDir('dp-') });
  const domain = `devpivot-${sessionId}-n1`;
  try {
    const node = await host.createNode(guestNode({ firmware: 'uefi' }));
    await node.start();
    await waitFor('vm.console', (e) => e.line.includes('EFI stub'), 60_000);
    await waitFor('vm.console', (e) => e.line === 'devpivot-test: init started', 60_000);
    t.true(existsSync(`/var/lib/libvirt/qemu/nvram/${domain}_VARS.fd`), 'libvirt made NVRAM from the template');
    await node.destroy();
  } finally {
    await host.destroyAll();
    await host.close();
  }
  t.false(existsSync(`/var/lib/libvirt/qemu/nvram/${domain}_VARS.fd`));
  await nothingLeft(t, 'qemu:///system', sessionId, domain);
});

test.serial(
  'remote protocol (qemu+tcp to a private libvirtd): same boot, volumes uploaded through streams',
  async (t) => {
    const figures = await bootAndReboot(t, daemon.tcpUri, { poolPath: daemon.poolPath });
    t.log(`remote: create ${figures.createMs} ms, first line ${figures.firstLineMs} ms`);
    t.true(figures.ticks >= figures.expectedTicks * 0.8);
  },
);

for (const [mode, expected] of [
  ['poweroff', { crashed: undefined, stopped: 'guest shut down' }],
  ['panic', { crashed: 'panicked', stopped: 'crashed' }],
] as const) {
  test.serial(
    `guest ${mode}: ${expected.crashed ? 'vm.crashed, then ' : ''}vm.stopped (${expected.stopped})`,
    async (t) => {
      const bus = new EventBus();
      const { events, waitFor } = recorder(bus);
      const sessionId = session(mode);
      const host = await privateHost(bus, sessionId);
      try {
        const node = await host.createNode(guestNode({ cmdline: `devpivot.test=${mode}` }));
        await node.start();
        const stopped = await waitFor('vm.stopped', (e) => e.domain === node.domain, 120_000);
        t.is(stopped.reason, expected.stopped);
        const crashes = events.filter((e) => e.kind === 'vm.crashed') as Stamped<EventOf<'vm.crashed'>>[];
        t.deepEqual(
          crashes.map((e) => e.reason),
          expected.crashed ? [expected.crashed] : [],
        );
        t.false(events.some((e) => e.kind === 'vm.reboot'));
      } finally {
        await host.destroyAll();
        await host.close();
      }
      await nothingLeft(t, daemon.tcpUri, sessionId, `devpivot-${sessionId}-n1`);
    },
  );
}

test.serial('devpivot down --all removes devpivot domains and volumes, never a foreign domain', async (t) => {
  const conn = await Connection.open(daemon.tcpUri);
  const foreign = await conn.defineDomain(
    "<domain type='qemu'><name>devpivot-test-vm-foreign</name><memory unit='MiB'>64</memory>" +
      "<os><type arch='x86_64'>hvm</type></os></domain>",
  );
  foreign.free();
  const stateDir = tempDir('devpivot-test-vm-state-');
  const sessionId = session('down');
  const host = await privateHost(new EventBus(), sessionId, stateDir);
  try {
    await host.createNode({
      name: 'n1',
      image: guest.baseImage,
      ignition: '{}',
      memoryMiB: 128,
      vcpus: 1,
      firmware: 'uefi',
    });
  } finally {
    await host.close();
  }
  const listed = await runCli(['ps', '--connect', daemon.tcpUri], { env: { DEVPIVOT_STATE_DIR: stateDir } });
  t.regex(listed.stdout, new RegExp(`devpivot-${sessionId}-n1\\s+${sessionId}\\s+n1\\s+shut off`));
  t.notRegex(listed.stdout, /foreign/);
  const down = await runCli(['down', '--all', '--connect', daemon.tcpUri], { env: { DEVPIVOT_STATE_DIR: stateDir } });
  t.is(down.code, 0, down.stderr);
  t.regex(down.stdout, new RegExp(`removed domain devpivot-${sessionId}-n1`));
  t.regex(down.stdout, new RegExp(`deleted volume devpivot-${sessionId}--n1\\.qcow2`));
  t.regex(down.stdout, new RegExp(`deleted volume devpivot-${sessionId}--n1\\.ign`));
  try {
    const survivor = await conn.lookupDomain('devpivot-test-vm-foreign');
    t.truthy(survivor, 'the foreign domain survives down --all');
    t.is(await survivor?.metadata(DEVPIVOT_XMLNS), undefined);
    await survivor?.undefine(0);
    survivor?.free();
  } finally {
    await conn.close();
  }
  await nothingLeft(t, daemon.tcpUri, sessionId, `devpivot-${sessionId}-n1`);
  const again = await runCli(['down', '--connect', daemon.tcpUri], { env: { DEVPIVOT_STATE_DIR: stateDir } });
  t.regex(again.stdout, /nothing to remove/);
});

test.serial('an unreachable libvirtd gives a clear error quickly', async (t) => {
  const uri = 'qemu+unix:///system?socket=/nonexistent';
  const started = Date.now();
  const error = await t.throwsAsync(openHost({ uri, bus: new EventBus(), stateDir: tmpdir() }), {
    instanceOf: LibvirtError,
  });
  t.is(error?.code, 'LIBVIRT_UNREACHABLE');
  t.regex(error?.message ?? '', /\/nonexistent/);
  t.truthy(error?.hint);
  t.true(Date.now() - started < 5000);
  const cli = await runCli(['ps', '--connect', uri], { timeoutMs: 15_000 });
  t.is(cli.code, 2, 'libvirt unreachable is a set-up error (README "Exit status")');
  t.regex(cli.stderr, /error\[LIBVIRT_UNREACHABLE\]: cannot reach libvirt/);
  t.regex(cli.stderr, /hint: /);
});

test.serial(
  'libvirtd restarting: the host reports the lost connection, reconnects, re-attaches consoles and events',
  async (t) => {
    const bus = new EventBus();
    const { waitFor } = recorder(bus);
    const sessionId = session('reconnect');
    const host = await privateHost(bus, sessionId);
    try {
      const node = await host.createNode(guestNode());
      await node.start();
      await waitFor('vm.console', (e) => e.line.startsWith('devpivot-test: tick'), 120_000);
      await daemon.stop();
      const lost = await waitFor('log', (e) => e.message.includes('lost the libvirt connection'), 20_000);
      t.is(lost.level, 'error');
      await daemon.restart();
      const back = await waitFor('log', (e) => e.message.startsWith('reconnected to'), 40_000);
      t.true(host.connection.isAlive());
      // the guest kept running; its console is read again after the reconnect
      await waitFor('vm.console', (e) => e.line.startsWith('devpivot-test: tick') && e.at > back.at, 20_000);
      // and lifecycle events flow on the new connection
      await node.powerOff();
      await waitFor('vm.stopped', (e) => e.domain === node.domain && e.at > back.at, 20_000);
    } finally {
      await host.destroyAll();
      await host.close();
    }
    await nothingLeft(t, daemon.tcpUri, sessionId, `devpivot-${sessionId}-n1`);
  },
);
