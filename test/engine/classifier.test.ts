import { readFileSync } from 'node:fs';
import test from 'ava';
import {
  type ClassifierInput,
  type ClassifierState,
  classify,
  type GuestEvent,
  initialState,
} from '../../src/engine/classifier.js';
import { stripConsoleNoise } from '../../src/engine/console-noise.js';
import { refusedRequest } from '../../src/engine/refused-request.js';
import { repoRoot } from '../helpers/cli.js';

function consoleOf(name: string): ClassifierInput[] {
  return (
    readFileSync(`${repoRoot}test/engine/consoles/${name}`, 'utf8')
      .split('\n')
      // '#' lines label where the lines under them come from
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => ({ kind: 'vm.console', node: 'n1', line }))
  );
}

function run(
  inputs: ClassifierInput[],
  state: ClassifierState = initialState,
): { events: GuestEvent[]; state: ClassifierState } {
  const events: GuestEvent[] = [];
  for (const input of inputs) {
    const out = classify(state, input);
    state = out.state;
    events.push(...out.events);
  }
  return { events, state };
}

const brief = (events: GuestEvent[]) =>
  events.map((event) => {
    switch (event.kind) {
      case 'guest.pivot':
        return `pivot ${event.phase} ${event.target.slice(0, 30)}`;
      case 'guest.booted':
        return `booted ${event.version} ${event.commit.slice(0, 4)}`;
      case 'guest.ignition':
        return `ignition ${event.ok}`;
      case 'guest.pivot.skipped':
        return `skipped ${event.reason.slice(0, 17)}`;
      case 'guest.progress':
        return `progress ${event.task} ${event.steps}/${event.stepsTotal}`;
      case 'guest.health':
        return `health ${event.ok}${event.check ? ` ${event.check}` : ''}`;
      case 'guest.fallback':
        return `fallback ${event.tool}`;
      default:
        return `failure ${event.reason.split(':')[0]}`;
    }
  });

test('a recorded fixture pivot: each fact once, report lines and generic markers agree', (t) => {
  const { events } = run(consoleOf('fixture-pivot.log'));
  t.deepEqual(brief(events), [
    'ignition true',
    'booted 1 1111',
    'pivot pulling 10.0.2.2:41234/devpivot/fixtur',
    'pivot staging 10.0.2.2:41234/devpivot/fixtur',
    'pivot staged 10.0.2.2:41234/devpivot/fixtur',
    'pivot rebooting 10.0.2.2:41234/devpivot/fixtur',
  ]);
});

test('the next boot after a reboot event reports its facts again', (t) => {
  const first = run(consoleOf('fixture-pivot.log'));
  const second = run(
    [{ kind: 'vm.reboot', node: 'n1', domain: 'd' }, ...consoleOf('fixture-newboot.log')],
    first.state,
  );
  t.deepEqual(brief(second.events), [
    'booted 2 3333',
    'pivot pulling 10.0.2.2:41234/devpivot/fixtur',
    'skipped already at target',
  ]);
  // without the reboot event, the same boot's facts are not repeated
  const same = run(consoleOf('fixture-newboot.log'), first.state);
  t.deepEqual(brief(same.events), ['skipped already at target']);
});

test('a generic marker before the report line still names the target known from an earlier boot', (t) => {
  const first = run(consoleOf('fixture-pivot.log'));
  const { events } = run(
    [
      { kind: 'vm.reboot', node: 'n1', domain: 'd' },
      { kind: 'vm.console', node: 'n1', line: 'pivot: Already at target pivot; exiting...' },
      {
        kind: 'vm.console',
        node: 'n1',
        line: 'devpivot-report: {"event":"pivot-skipped","target":"other","reason":"already at target"}',
      },
    ],
    first.state,
  );
  t.deepEqual(events, [
    {
      kind: 'guest.pivot.skipped',
      node: 'n1',
      target:
        '10.0.2.2:41234/devpivot/fixture-2@sha256:2222222222222222222222222222222222222222222222222222222222222222',
      reason: 'already at target',
    },
  ]);
});

test('RHCOS 4.1 legacy pivot, from upstream logs and pivot’s source: pull, stage, reboot', (t) => {
  const { events } = run(consoleOf('rhcos-legacy-pivot.log'));
  t.deepEqual(brief(events), [
    'ignition true',
    'pivot pulling registry.svc.ci.openshift.org/',
    'pivot staging registry.svc.ci.openshift.org/',
    'pivot staged registry.svc.ci.openshift.org/',
    'pivot rebooting registry.svc.ci.openshift.org/',
  ]);
  const pulling = events[1] as Extract<GuestEvent, { kind: 'guest.pivot' }>;
  t.is(
    pulling.target,
    'registry.svc.ci.openshift.org/rhcos/maipo@sha256:def5c8ef775f634d99e3f603da0db7591a0113ad8307bc8d8545a170787a2825',
  );
});

test('FCOS rpm-ostree rebase markers, from rpm-ostree’s source', (t) => {
  const { events } = run(consoleOf('fcos-rebase.log'));
  t.deepEqual(brief(events), [
    'pivot pulling 10.0.2.2:5000/devpivot/fcos@sh',
    'pivot staged 10.0.2.2:5000/devpivot/fcos@sh',
    'pivot rebooting 10.0.2.2:5000/devpivot/fcos@sh',
  ]);
});

test('bootc\'s "Queued for next boot: IMAGE" names the target when no earlier line did (a console that lost the Fetching line)', (t) => {
  const image =
    '10.0.2.2:43217/devpivot/local/index@sha256:887ade392a4185c03adf70f3ea92dc95bff5b58d63329f6bc3399df537bf77cf';
  const { events } = run([
    // transcribed from a multi-arch run's console (images-users-bring.vm.test.ts), the bootc stand-in's line
    { kind: 'vm.console', node: 'n1', line: `[   80.446648] bootc[290]: Queued for next boot: ${image}` },
  ]);
  t.deepEqual(
    events.map((e) => (e.kind === 'guest.pivot' ? `${e.phase} ${e.target}` : e.kind)),
    [`staged ${image}`],
  );
  // a target named earlier in the boot stays the one reported
  const earlier = run([
    { kind: 'vm.console', node: 'n1', line: 'bootc[290]: Fetching ostree-unverified-registry:10.0.2.2:1/a@sha256:00' },
    { kind: 'vm.console', node: 'n1', line: `bootc[290]: Queued for next boot: ${image}` },
  ]);
  t.deepEqual(
    earlier.events.map((e) => (e.kind === 'guest.pivot' ? `${e.phase} ${e.target}` : e.kind)),
    ['pulling 10.0.2.2:1/a@sha256:00', 'staged 10.0.2.2:1/a@sha256:00'],
  );
});

test('every failure marker becomes guest.failure with its line; a unit failing after a fatal line is its consequence', (t) => {
  const { events } = run(consoleOf('failures.log'));
  t.deepEqual(brief(events), [
    'failure kernel panic',
    'failure dracut fatal',
    'failure emergency shell',
    'failure oom killer',
    'failure kernel oops',
    'failure kernel warning',
    'ignition false',
    'failure Ignition failed',
    'failure fatal error',
  ]);
  const panic = events[0] as Extract<GuestEvent, { kind: 'guest.failure' }>;
  t.is(panic.line, 'Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)');
});

/**
 * One line for each of kola's consoleChecks (coreos-assembler 05db482e mantle/kola/harness.go): the part kola's regex
 * matches is as kola wrote it; the text around it is made up unless a comment names its source.
 */
const KOLA_LINES: [string, string][] = [
  ['emergency shell', 'Press Enter for emergency shell or wait 5 minutes for reboot.'],
  ['emergency shell', '         Starting Emergency Shell...'],
  ['dracut fatal', '[    5.1] dracut: Refusing to continue'],
  ['kernel panic', '[    3.2] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100'],
  ['kernel oops', '[   13.2] Oops: 0000 [#1] SMP PTI'],
  ['kernel warning', '[    2.0] WARNING: CPU: 1 PID: 238 at kernel/workqueue.c:3046 __flush_work+0x2a/0x70'],
  ['failure of disk under I/O', '[   40.1] sd 0:0:0:0: rejecting I/O to offline device'],
  [
    'ext4 delayed allocation failure',
    '[ 90.2] EXT4-fs (vda4): Delayed block allocation failed for inode 1234 at logical offset 0 with max blocks 8 with error 28',
  ],
  ['GRUB memory corruption', 'free magic is broken at 0x7ff0: 0x0'],
  ['Ignition fetch cancellation race', 'ignition[612]: failed to fetch config: context canceled'],
  [
    'initrd-cleanup.service terminated',
    'systemd[1]: initrd-cleanup.service: Main process exited, code=killed, status=15/TERM',
  ],
  ['Go panic', 'panic: runtime error: invalid memory address or nil pointer dereference'],
  ['segfault', 'systemd-coredump[900]: Process 880 (rpm-ostree) of user 0 dumped core. (signal=11/SEGV)'],
  ['core dump', 'kernel: rpm-ostree[880]: segfault at 0 ip 0 sp 0 error 4 (core dumped)'],
  // Debian's systemd 252 (libsystemd-core-252.so): "Ordering cycle found, skipping %s"
  ['systemd ordering cycle', 'systemd[1]: basic.target: Ordering cycle found, skipping sockets.target/start'],
  ['oom killer', '[  120.1] podman invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0'],
  [
    'systemd generator failure',
    'systemd[1]: /usr/lib/systemd/system-generators/coreos-boot-mount-generator failed with exit status 1.',
  ],
];

test("every one of kola's console checks fails the node, with kola's description as the reason", (t) => {
  for (const [desc, line] of KOLA_LINES) {
    const { events } = run([{ kind: 'vm.console', node: 'n1', line }]);
    const failure = events.find((e) => e.kind === 'guest.failure') as { reason?: string } | undefined;
    t.is(failure?.reason?.split(':')[0], desc, line);
  }
});

test("kola's bonding check needs ten link-up lines in one boot", (t) => {
  const line = '[ 10.0] bond0: (slave eth1): link status up for interface eth1, enabling it in 200 ms';
  const nine = run(Array.from({ length: 9 }, (): ClassifierInput => ({ kind: 'vm.console', node: 'n1', line })));
  t.deepEqual(nine.events, []);
  const ten = run([{ kind: 'vm.console', node: 'n1', line }], nine.state);
  t.is((ten.events[0] as { reason?: string }).reason?.split(':')[0], 'excessive bonding link status messages');
  const rebooted = run(
    [
      { kind: 'vm.reboot', node: 'n1', domain: 'd' },
      { kind: 'vm.console', node: 'n1', line },
    ],
    nine.state,
  );
  t.deepEqual(rebooted.events, [], 'the count is per boot');
});

test('the real Ignition markers: ignition-complete.target and the /etc/issue lines; no config is a failure', (t) => {
  const lines = [
    // systemd 252 "combined" format; fedora-coreos-config 48fa1e5b coreos-ignition-write-issues
    '[  OK  ] Reached target ignition-complete.target - Ignition Complete.',
    'Ignition: ran on 2026/12/01 20:40:01 UTC (this boot)',
    'Ignition: user-provided config was applied',
  ];
  for (const line of lines)
    t.deepEqual(brief(run([{ kind: 'vm.console', node: 'n1', line }]).events), ['ignition true'], line);
  t.deepEqual(
    run([{ kind: 'vm.console', node: 'n1', line: 'Ignition: ran on 2026/12/01 20:40:01 UTC (at least 1 boot ago)' }])
      .events,
    [],
    'an earlier boot’s provisioning is not this boot’s Ignition',
  );
  const none = run([{ kind: 'vm.console', node: 'n1', line: '\x1b[0;33mIgnition: no config provided by user\x1b[0m' }]);
  t.regex((none.events[0] as { reason?: string }).reason ?? '', /^Ignition got no config/);
});

test('pivot’s glog fatal lines, from its source, with or without the MCD’s unit prefix', (t) => {
  for (const line of [
    // openshift/pivot e31a72d cmd/root.go:284 glog.Fatalf("%v", err), root.go:344, utils/run.go:84
    'F1201 20:40:01.123456    1234 root.go:284] parsing current osImageURL: repository name must have at least one component',
    'pivot.service: F0209 15:36:52.101144   90592 root.go:344] Multiple refs found in repo!',
    'F1201 20:40:01.123456    1234 run.go:84] ostree: exit status 1',
  ]) {
    const { events } = run([{ kind: 'vm.console', node: 'n1', line }]);
    t.is((events[0] as { reason?: string }).reason?.split(':')[0], 'fatal error', line);
  }
  // pivot's warnings are not failures (utils/run.go:40; upstream log: openshift/machine-config-operator PR #1868)
  const warning = 'W0519 13:06:46.222937 2996778 run.go:40] podman failed: exit status 125; retrying...';
  t.deepEqual(run([{ kind: 'vm.console', node: 'n1', line: warning }]).events, []);
});

// systemd 252's "Failed to start %s." (Debian libsystemd-core-252.so), %s the description or "name - description"
test('a unit that fails to start, on its own, is a failure (older and combined status formats)', (t) => {
  for (const line of ['[FAILED] Failed to start Pivot Tool.', '[FAILED] Failed to start pivot.service - Pivot Tool.']) {
    const { events } = run([{ kind: 'vm.console', node: 'n1', line }]);
    t.is((events[0] as { reason?: string }).reason?.split(':')[0], 'unit failed to start', line);
  }
  // rpm-ostree d5ef5f0c: the rebase prints "Pulling manifest: …" (sysroot_upgrade.rs), then the client's error.
  const rpmOstree = run(
    [
      'Pulling manifest: ostree-unverified-registry:10.0.2.2:5000/os@sha256:ab',
      'error: Target image does not have ostree.bootable label',
    ].map((line): ClassifierInput => ({ kind: 'vm.console', node: 'n1', line })),
  );
  t.deepEqual(brief(rpmOstree.events).slice(-1), ['failure update tool error']);
  const prefixed = run([{ kind: 'vm.console', node: 'n1', line: 'rpm-ostree[812]: error: Loading sysroot: timeout' }]);
  t.deepEqual(brief(prefixed.events), ['failure update tool error']);
});

test("GRUB's own error line under OVMF, before any update tool runs, is no failure", (t) => {
  // Printed by GRUB's EFI image under OVMF without a usable video mode (seen on the fixture's hybrid disk); GRUB
  // goes on booting. The same text after a tool started would still count (the test above).
  const { events } = run([{ kind: 'vm.console', node: 'n1', line: 'error: no suitable video mode found.' }]);
  t.deepEqual(events, []);
});

test('the guest failure report and a crashed VM', (t) => {
  const { events } = run([
    {
      kind: 'vm.console',
      node: 'n1',
      line: 'devpivot-report: {"event":"failed","reason":"pull of x failed: manifest unknown"}',
    },
    { kind: 'vm.crashed', node: 'n1', domain: 'd', reason: 'panicked' },
  ]);
  t.deepEqual(
    events.map((e) => (e.kind === 'guest.failure' ? e.reason : e.kind)),
    ['pull of x failed: manifest unknown', 'the VM crashed: panicked'],
  );
});

test('broken report lines and ordinary lines are ignored', (t) => {
  const { events } = run(
    [
      'devpivot-report: {"event":"booted","bootId":',
      'devpivot-report: 42',
      'devpivot-report: {"event":"pivot","phase":"flying"}',
      'reboot: Restarting system',
      'Oopsie, nothing wrong',
      'systemd[1]: Started Session 1 of user core.',
    ].map((line): ClassifierInput => ({ kind: 'vm.console', node: 'n1', line })),
  );
  t.deepEqual(events, []);
});

test('stripConsoleNoise strips timestamps, systemd tags, colours and CR', (t) => {
  t.is(stripConsoleNoise('[   12.345] hello\r'), 'hello');
  t.is(stripConsoleNoise('[  OK  ] Started x'), 'Started x');
  t.is(stripConsoleNoise('\x1b[0;32m[FAILED]\x1b[0m Failed to start y'), 'Failed to start y');
});

test('recorded: rpm-ostree refusing a legacy image, its error glued to the login prompt (a real run)', (t) => {
  const { events } = run(consoleOf('fixture-rpm-ostree-refused.log'));
  const failures = events.flatMap((event) => (event.kind === 'guest.failure' ? [event.reason] : []));
  t.deepEqual(failures, [
    'update tool error: rpm-ostree[271]: error: Preparing import: Target image does not have ostree.bootable label',
  ]);
  t.is(stripConsoleNoise('fixture login: [   24.394320] rpm-ostree[271]: error: x'), 'rpm-ostree[271]: error: x');
  t.is(stripConsoleNoise('fixture login: '), 'fixture login:');
});

test('recorded: the systemd fixture pivoting with the legacy Ignition (serial console of a real run)', (t) => {
  // fixture-systemd-pivot.log: the serial console of test/images fixture.vm's first scenario (libvirt, TCG),
  // saved unedited: initramfs Ignition, systemd, the report unit, pivot's glog lines, shutdown, the v2 boot.
  // libvirt reports the guest's reset as vm.reboot after the kernel's last line
  const lines = consoleOf('fixture-systemd-pivot.log');
  const reset = lines.findIndex(
    (input) => input.kind === 'vm.console' && input.line.includes('reboot: machine restart'),
  );
  const reboot: ClassifierInput = { kind: 'vm.reboot', node: 'n1', domain: 'd' } as ClassifierInput;
  const { events } = run([...lines.slice(0, reset + 1), reboot, ...lines.slice(reset + 1)]);
  t.deepEqual(brief(events), [
    'ignition true',
    'booted 1 4d02',
    'pivot pulling 10.0.2.2:40841/fixture/os@sha2',
    'pivot staging 10.0.2.2:40841/fixture/os@sha2',
    'pivot staged 10.0.2.2:40841/fixture/os@sha2',
    'pivot rebooting 10.0.2.2:40841/fixture/os@sha2',
    'booted 2 a511',
  ]);
});

test("openshift/pivot's glog lines: podman pull is the pulling phase, an F line is a failure", (t) => {
  // Lines in the format of github.com/golang/glog with the messages of openshift/pivot e31a72d utils/run.go:16,48
  const pull = '[   17.2] pivot[219]: I1201 20:28:34.872833     219 run.go:16] Running: podman pull -q r/os@sha256:ab';
  const fatal = 'pivot[219]: F1201 20:14:08.743168     217 run.go:48] podman: timed out waiting for the condition';
  const { events } = run([pull, fatal].map((line) => ({ kind: 'vm.console', node: 'n1', line })));
  t.deepEqual(brief(events), ['pivot pulling r/os@sha256:ab', 'failure fatal error']);
});

test('a fatal line after retries names the last retried error as its cause; a new boot forgets it', (t) => {
  // openshift/pivot e31a72d utils/run.go:40,48 (the W "retrying" line and the F line after the last try) around
  // podman's `Error: ` stderr line as the fixture's podman stand-in prints it for skopeo 1.9's digest check.
  const error =
    'Error: error pulling image "r/os@sha256:ab": unable to pull r/os@sha256:ab: writing blob: happened during read: Digest did not match, expected sha256:11, got sha256:22';
  const retrying = 'pivot[219]: W1201 20:14:03.111111     219 run.go:40] podman failed: exit status 125; retrying...';
  const fatal = 'pivot[219]: F1201 20:14:08.743168     219 run.go:48] podman: timed out waiting for the condition';
  const lines = (...text: string[]) => text.map((line): ClassifierInput => ({ kind: 'vm.console', node: 'n1', line }));
  const { events, state } = run(lines(error, retrying, fatal));
  t.deepEqual(brief(events), ['failure fatal error']);
  const reason = (events[0] as Extract<GuestEvent, { kind: 'guest.failure' }>).reason;
  t.true(reason.startsWith(`fatal error: ${fatal} (last error before it: error pulling image`), reason);
  t.regex(reason, /Digest did not match, expected sha256:11, got sha256:22\)$/);
  // The retried error alone is no failure, and a reboot starts a boot with no cause remembered.
  t.deepEqual(run(lines(error)).events, []);
  const rebooted = run([{ kind: 'vm.reboot', node: 'n1', domain: 'd' }, ...lines(fatal)], state);
  t.is((rebooted.events[0] as Extract<GuestEvent, { kind: 'guest.failure' }>).reason, `fatal error: ${fatal}`);
});

test('a later pull names its own target (a second request after the first boot’s pivot)', (t) => {
  // openshift/pivot e31a72d utils/run.go:16 "Running: %s %s" for root.go's podman pull, glog header
  const pull = (image: string) =>
    `pivot[219]: I1201 20:28:34.872833     219 run.go:16] Running: podman pull -q ${image}`;
  const first = run([{ kind: 'vm.console', node: 'n1', line: pull('r/os-2@sha256:22') }]);
  const second = run(
    [
      { kind: 'vm.reboot', node: 'n1', domain: 'd' },
      { kind: 'vm.console', node: 'n1', line: pull('r/os-3@sha256:33') },
      { kind: 'vm.console', node: 'n1', line: 'pivot[333]: Staging deployment...done' },
    ],
    first.state,
  );
  t.deepEqual(brief(second.events), ['pivot pulling r/os-3@sha256:33', 'pivot staged r/os-3@sha256:33']);
});

test('a boot report carries the image by digest when the guest names one, and none when it is empty', (t) => {
  const image = `10.0.2.2:5000/devpivot/v2@sha256:${'d'.repeat(64)}`;
  const line = (value: string) =>
    `devpivot-report: {"event":"booted","bootId":"b","version":"2","commit":"${'e'.repeat(64)}","image":"${value}"}`;
  const named = run([{ kind: 'vm.console', node: 'n1', line: line(image) }]).events;
  t.like(named[0], { kind: 'guest.booted', commit: 'e'.repeat(64), image });
  const unnamed = run([{ kind: 'vm.console', node: 'n1', line: line('') }]).events;
  t.is(unnamed.length, 1);
  t.false('image' in unnamed[0]!);
});

test("a recorded mcd firstboot (fixture run): the MCD's lines give pulling, staging, staged and the reboot", (t) => {
  const { events } = run(consoleOf('fixture-mcd-firstboot.log'));
  t.deepEqual(
    brief(events).map((line) => line.replace(/10\.0\.2\.2:\d+/, 'REG')),
    [
      'ignition true',
      'booted 1 c6a7',
      'pivot pulling REG/devpivot/fixtur',
      'pivot staging REG/devpivot/fixtur',
      'pivot staged REG/devpivot/fixtur',
      'pivot rebooting REG/devpivot/fixtur',
    ],
  );
});

test("the MCD's legacy extraction (nice -- ionice -c 3, RunExtBackground) is the pull: oc's, else podman's", (t) => {
  // MCO a57ca291 pkg/daemon/pivot/utils/run.go:19 and :73, pkg/daemon/update.go:227 and :283; values made up.
  const image = `10.0.2.2:5000/devpivot/v2@sha256:${'2'.repeat(64)}`;
  for (const command of [
    `oc image extract -v 10 --path /:/run/mco-machine-os-content/os-content-1 --registry-config /var/lib/kubelet/config.json ${image}`,
    `podman pull -q --authfile /var/lib/kubelet/config.json ${image}`,
  ]) {
    const line = `podman[408]: I1202 03:31:40.201859     401 run.go:19] Running: nice -- ionice -c 3 ${command}`;
    const { events } = run([{ kind: 'vm.console', node: 'n1', line }]);
    t.like(events[0], { kind: 'guest.pivot', phase: 'pulling', target: image });
  }
});

test('the MCD firstboot error (retried forever upstream) is a failure; a warning of its own retries is not', (t) => {
  // Transcribed in the stand-in's format from MCO a57ca291 firstboot_complete_machineconfig.go:65 and
  // pkg/daemon/pivot/utils/run.go:45; values made up.
  const lines = [
    'podman[408]: W1202 03:31:45.201859     401 run.go:45] nice failed: running nice -- ionice -c 3 oc image extract -v 10 --path /:/run/mco-machine-os-content/os-content-1 r/os@sha256:ab failed: ionice: failed to execute oc: No such file or directory',
    'podman[408]: : exit status 127; retrying...',
    'podman[408]: W1202 03:31:50.201859     401 firstboot_complete_machineconfig.go:65] error: error running rpm-ostree kargs: exit status 1',
    'podman[408]: I1202 03:31:50.301859     401 firstboot_complete_machineconfig.go:66] Sleeping 1 minute for retry',
  ];
  const { events } = run(lines.map((line) => ({ kind: 'vm.console', node: 'n1', line })));
  t.deepEqual(brief(events), ['failure machine-config daemon firstboot error']);
});

test("rpm-ostree's same-ref refusal is a refused request, not an update tool error, even with a pull at work", (t) => {
  const ref = 'ostree-unverified-registry:10.0.2.2:5000/devpivot/v2@sha256:' + '2'.repeat(64);
  const { events } = run([
    { kind: 'vm.console', node: 'n1', line: `Pulling manifest: ${ref}` },
    // the journal line on the console, as MCD logs quote it (OCPBUGS-56279); rpmostreed-transaction-types.cxx:91
    { kind: 'vm.console', node: 'n1', line: `rpm-ostree[812]: error: Old and new refs are equal: ${ref}` },
    { kind: 'vm.console', node: 'n1', line: `error: Old and new refs are equal: ${ref}` },
  ]);
  t.deepEqual(events.slice(1), [
    {
      kind: 'guest.pivot.skipped',
      node: 'n1',
      target: `10.0.2.2:5000/devpivot/v2@sha256:${'2'.repeat(64)}`,
      reason: 'old and new refs are equal',
    },
  ]);
  t.deepEqual(refusedRequest(`x\nerror: Old and new refs are equal: ${ref}\n`), {
    target: `10.0.2.2:5000/devpivot/v2@sha256:${'2'.repeat(64)}`,
    reason: 'old and new refs are equal',
  });
  // any other rpm-ostree error after a pull stays a failure
  const other = run([
    { kind: 'vm.console', node: 'n1', line: `Pulling manifest: ${ref}` },
    { kind: 'vm.console', node: 'n1', line: 'error: Preparing import: Fetching manifest: connection refused' },
  ]);
  t.deepEqual(brief(other.events).slice(1), ['failure update tool error']);
});

test("bootc's unchanged spec is a refused request naming the image asked for; a line that only mentions it is not", (t) => {
  const image = `10.0.2.2:5000/devpivot/v2@sha256:${'2'.repeat(64)}`;
  // crates/lib/src/cli.rs:1436 (bootc 534c76ea): the whole line, exit 0
  t.deepEqual(refusedRequest('Image specification is unchanged.\ndevpivot: nothing was staged; no reboot\n', image), {
    target: image,
    reason: 'image specification is unchanged',
  });
  t.is(refusedRequest('echo Image specification is unchanged. or not\n', image), undefined);
  // an upgrade whose tag did not move: bootc cli.rs:1360, rpm-ostree rpmostreed-transaction-types.cxx:1608
  t.like(refusedRequest('No update available.\n', image), { target: image, reason: 'no update available' });
  t.like(refusedRequest('Pulling manifest: x\nNo upgrade available.\n', image), { reason: 'no upgrade available' });
  const { events } = run([{ kind: 'vm.console', node: 'n1', line: 'bootc[300]: Image specification is unchanged.' }]);
  t.deepEqual(brief(events), ['skipped image specificati']);
});

test("bootc refusing a layer media type it cannot read is the guest's own error, reported as it printed it", (t) => {
  // The fixture's import (container-import.sh ci_untar) says what ostree-ext's Decompressor says.
  const line =
    'bootc[288]: error: Switching (ostree): Importing: Layer sha256:8ab2: Unhandled layer type: application/vnd.oci.image.layer.v1.tar+bzip2';
  const { events } = run(
    ['bootc[288]: layers already present: 1; layers needed: 1 (166 bytes)', line].map(
      (text): ClassifierInput => ({ kind: 'vm.console', node: 'n1', line: text }),
    ),
  );
  const failures = events.flatMap((event) => (event.kind === 'guest.failure' ? [event.reason] : []));
  t.deepEqual(failures, [`update tool error: ${line}`]);
});

test('Secure Boot refusals (firmware, shim, GRUB) are one typed failure per boot, not a wait until timeout', (t) => {
  const firmware = run(consoleOf('secure-boot-refusals.log')).events;
  t.deepEqual(
    firmware.map((e) => e.kind === 'guest.failure' && { cause: e.cause, reason: e.reason }),
    [
      {
        cause: 'secure-boot',
        reason:
          'Secure Boot: the firmware refused the boot loader: BdsDxe: failed to load Boot0002 "UEFI Misc Device" from PciRoot(0x0)/Pci(0x2,0x0): Access Denied',
      },
    ],
  );
  // GRUB (Debian 2.06, grub-core/kern/efi/sb.c) on an unsigned kernel, then its consequence: one failure
  const grub = run(
    ['error: bad shim signature.', 'error: you need to load the kernel first.', ''].map((line) => ({
      kind: 'vm.console' as const,
      node: 'n1',
      line,
    })),
  ).events;
  t.is(grub.length, 1);
  t.like(grub[0], { kind: 'guest.failure', cause: 'secure-boot' });
  t.regex((grub[0] as { reason: string }).reason, /^Secure Boot: GRUB refused the kernel: shim did not verify it: /);
  // 2.12's form with the source position, and shim's own refusal of its second stage
  for (const line of [
    'error: ../../grub-core/kern/efi/sb.c:182:bad shim signature.',
    'Verification failed: (0x1A) Security Violation',
  ])
    t.like(run([{ kind: 'vm.console', node: 'n1', line }]).events[0], { kind: 'guest.failure', cause: 'secure-boot' });
  // Not refusals: a boot entry that is not there, plain UEFI's GRUB video error before any tool runs
  for (const line of [
    'BdsDxe: failed to load Boot0001 "UEFI QEMU DVD-ROM QM00005 " from PciRoot(0x0)/Pci(0x1F,0x2)/Sata(0x2,0xFFFF,0x0): Not Found',
    'error: no suitable video mode found.',
  ])
    t.deepEqual(run([{ kind: 'vm.console', node: 'n1', line }]).events, [], line);
});
