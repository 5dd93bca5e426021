import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';
import { StagedWatchdog } from '../../src/engine/staged-watchdog.js';

function watch(drivers: Record<string, 'legacy' | 'rpm-ostree' | 'bootc'>, graceMs = 50) {
  const bus = new EventBus();
  const failures: string[] = [];
  const dog = new StagedWatchdog(bus, new Map(Object.entries(drivers)), graceMs);
  bus.subscribe((event: Stamped) => {
    dog.observe(event);
    if (event.kind === 'guest.failure') failures.push(`${event.node}: ${event.reason}`);
  });
  const staged = (node: string) => bus.emit({ kind: 'guest.pivot', node, phase: 'staged', target: 'v2' });
  return { bus, dog, failures, staged };
}

const later = () => new Promise((resolve) => setTimeout(resolve, 120));

test('staged and then nothing: a failure naming the reboot-needed file (legacy) or the unit (others)', async (t) => {
  const { failures, staged, dog } = watch({ a: 'legacy', b: 'rpm-ostree', c: 'legacy' });
  staged('a');
  staged('b');
  await later();
  t.is(failures.length, 2);
  t.regex(
    failures[0]!,
    /^a: the pivot staged v2 but a did not reboot within 50ms: pivot reboots only with --reboot or when \/run\/pivot\/reboot-needed exists \(mcd-write-pivot-reboot.service/,
  );
  t.regex(failures[1]!, /^b: .*devpivot's update unit runs systemctl reboot after staging/);
  dog.dispose();
});

test('a reboot phase, a reboot, a stop, or a reboot devpivot asked for cancel it', async (t) => {
  const { bus, dog, failures, staged } = watch({ a: 'legacy', b: 'legacy', c: 'legacy', d: 'legacy', e: 'legacy' });
  for (const node of ['a', 'b', 'c', 'd', 'e']) staged(node);
  bus.emit({ kind: 'guest.pivot', node: 'a', phase: 'rebooting', target: 'v2' });
  bus.emit({ kind: 'vm.reboot', node: 'b', domain: 'x' });
  bus.emit({ kind: 'vm.stopped', node: 'c', domain: 'x', reason: 'destroyed' });
  dog.rebootRequested('d');
  await later();
  t.deepEqual(
    failures.map((f) => f.split(':')[0]),
    ['e'],
  );
  staged('x'); // not a node of the run
  dog.dispose();
});

test('dispose stops every pending watch', async (t) => {
  const { dog, failures, staged } = watch({ a: 'legacy' });
  staged('a');
  dog.dispose();
  await later();
  t.deepEqual(failures, []);
});

test('a pivot that stages again on a later boot (after a power cut) is named as such: no first-boot reboot unit', async (t) => {
  const { bus, dog, failures, staged } = watch({ a: 'legacy' });
  bus.emit({ kind: 'vm.started', node: 'a', domain: 'x' });
  bus.emit({ kind: 'vm.stopped', node: 'a', domain: 'x', reason: 'destroyed' });
  bus.emit({ kind: 'vm.started', node: 'a', domain: 'x' });
  staged('a');
  await later();
  t.is(failures.length, 1);
  t.regex(failures[0]!, /on the first boot only \(ConditionFirstBoot=true\), and this was boot 2 of a: /);
  dog.dispose();
});

test('console lines after staged keep the watch waiting: it fires a grace period after the last one', async (t) => {
  const { bus, dog, failures, staged } = watch({ a: 'bootc', b: 'bootc' }, 300);
  const nodes = () => failures.map((f) => f.split(':')[0]);
  const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  staged('a');
  staged('b');
  // a shuts down slowly, a line every 60 ms for 900 ms (three grace periods of 300 ms); b stays quiet
  for (let at = 60; at <= 900; at += 60)
    setTimeout(() => bus.emit({ kind: 'vm.console', node: 'a', line: `Stopped unit ${at}` }), at);
  await wait(950);
  t.deepEqual(nodes(), ['b'], 'b failed; a, still printing, did not');
  await wait(450);
  t.deepEqual(nodes(), ['b', 'a'], 'a failed once quiet for the grace period');
  dog.dispose();
});
