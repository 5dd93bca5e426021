import { readFileSync } from 'node:fs';
import test from 'ava';
import {
  type ClassifierInput,
  type ClassifierState,
  classify,
  type GuestEvent,
  initialState,
  stripConsoleNoise,
} from '../../src/engine/classifier.js';
import { repoRoot } from '../helpers/cli.js';

function consoleOf(name: string): ClassifierInput[] {
  return readFileSync(`${repoRoot}test/engine/consoles/${name}`, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => ({ kind: 'vm.console', node: 'n1', line }));
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

test('RHCOS legacy pivot markers with timestamps and systemd tags', (t) => {
  const { events } = run(consoleOf('rhcos-pivot.log'));
  t.deepEqual(brief(events), [
    'ignition true',
    'booted 410.84.202201 aaaa',
    'pivot staging 411.86.202212 (bbbb00000000000',
    'pivot staged 411.86.202212 (bbbb00000000000',
    'pivot rebooting 411.86.202212 (bbbb00000000000',
  ]);
});

test('FCOS rpm-ostree rebase markers', (t) => {
  const { events } = run(consoleOf('fcos-rebase.log'));
  t.deepEqual(brief(events), [
    'pivot pulling 10.0.2.2:5000/devpivot/fcos@sh',
    'pivot staged 10.0.2.2:5000/devpivot/fcos@sh',
    'pivot rebooting 10.0.2.2:5000/devpivot/fcos@sh',
  ]);
});

test('every failure marker becomes guest.failure with its line', (t) => {
  const { events } = run(consoleOf('failures.log'));
  t.deepEqual(brief(events), [
    'failure kernel panic',
    'failure dracut refused to continue',
    'failure emergency mode',
    'failure out of memory',
    'failure kernel oops',
    'ignition false',
    'failure Ignition failed',
  ]);
  const panic = events[0] as Extract<GuestEvent, { kind: 'guest.failure' }>;
  t.is(panic.line, 'Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)');
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
