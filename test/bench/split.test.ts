import test from 'ava';
import { type SplitEvent, splitPivot } from '../../bench/split.js';

// One node's pivot as devpivot's NDJSON shows it (seconds from vm.started), with another node's events between.
const seconds: [number, Omit<SplitEvent, 'at'>][] = [
  [0, { kind: 'vm.started' }],
  [3, { kind: 'vm.console', line: '[    0.000000] Linux version 6.1.0' }],
  [5, { kind: 'vm.console', line: '[    2.1] Run /init as init process' }],
  [17, { kind: 'vm.console', line: '[   14.0] systemd[1]: systemd 252.39 running in system mode' }],
  [25, { kind: 'guest.booted', version: '1' }],
  [35, { kind: 'guest.pivot', phase: 'pulling' }],
  [40, { kind: 'blob.progress', sent: 100, total: 100 }],
  [50, { kind: 'blob.progress', sent: 6000, total: 6000 }],
  [66, { kind: 'guest.pivot', phase: 'staging' }],
  [73, { kind: 'guest.pivot', phase: 'staged' }],
  [80, { kind: 'vm.reboot' }],
  [87, { kind: 'vm.console', line: '[    0.000000] Linux version 6.1.0' }],
  [89, { kind: 'vm.console', line: '[    2.0] Run /init as init process' }],
  [100, { kind: 'vm.console', line: '[   12.0] systemd[1]: systemd 252.39 running in system mode' }],
  [118, { kind: 'guest.booted', version: '2' }],
];
const events: SplitEvent[] = seconds.flatMap(([s, e]) => [
  { ...e, at: s * 1000, node: 'a' },
  { kind: 'guest.booted', version: '2', at: s * 1000 + 1, node: 'b' },
]);

test('a pivot splits into consecutive phases that add up to VM start → booted v2', (t) => {
  const split = splitPivot(events, 'a');
  t.deepEqual(Object.fromEntries(split), {
    'boot 1: firmware + bootloader': 3,
    'boot 1: kernel': 2,
    'boot 1: initramfs (Ignition)': 12,
    'boot 1: userspace to the pivot': 18,
    pull: 15,
    import: 16,
    stage: 7,
    'shutdown + finalize': 7,
    'boot 2: firmware + bootloader': 7,
    'boot 2: kernel': 2,
    'boot 2: initramfs': 11,
    'boot 2: userspace to the report': 18,
    total: 118,
  });
});

test('a marker the guest never prints merges its phase into the next one', (t) => {
  const split = splitPivot(
    events.filter((e) => !/Run \/init/.test(e.line ?? '')),
    'a',
  );
  t.is(split.get('boot 1: kernel'), undefined);
  t.is(split.get('boot 1: initramfs (Ignition)'), 14);
  t.is(split.get('boot 2: initramfs'), 13);
  t.is(split.get('total'), 118);
});
