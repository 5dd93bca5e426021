import test from 'ava';
import { classify, initialState } from '../../src/engine/classifier.js';
import { guestProgress } from '../../src/engine/guest-progress.js';
import { formatPlain } from '../../src/report/plain.js';

const D = 'sha256:a0f46a8717e37ee5ba3b1711f5baad06ddcd80c9357c7cb5236d2b7afe0aae40';
const sub = (bytes: number) =>
  `{"bytes":${bytes},"bytesCached":0,"bytesTotal":4300,"description":"ostree chunk: 24b128a8bf211836b2561","id":"24b128a8bf211836b2561","subtask":"ostree chunk"}`;
const pulling = (bytes: number, steps: number) =>
  `{"bytes":${bytes},"bytesCached":0,"bytesTotal":4300,"description":"Pulling Image: ${D}","id":"${D}","steps":${steps},"stepsCached":0,"stepsTotal":1,"subtasks":[${sub(bytes)}],"task":"pulling","type":"ProgressBytes"}`;

test('a bootc progress line on the console (the unit relay, journal prefix or not) is a guest.progress', (t) => {
  const line = `[   31.5] devpivot-progress: ${pulling(1200, 0)}`;
  const out = classify(initialState, { kind: 'vm.console', node: 'n', line });
  t.deepEqual(out.events, [
    {
      kind: 'guest.progress',
      node: 'n',
      tool: 'bootc',
      task: 'pulling',
      steps: 0,
      stepsTotal: 1,
      bytes: 1200,
      bytesTotal: 4300,
      partial: true,
      subtask: 'ostree chunk: 24b128a8bf211836b2561',
    },
  ]);
  t.like(guestProgress('n', `devpivot-progress: ${pulling(4300, 1)}`), { steps: 1, bytes: 4300 });
  t.is(guestProgress('n', `devpivot-progress: ${pulling(4300, 1)}`)?.partial, undefined, 'a step: not partial');
  const staging = `devpivot-progress: {"description":"Deploying Image","id":"${D}","steps":2,"stepsCached":0,"stepsTotal":3,"subtasks":[{"completed":false,"description":"Removing old images","id":"cleanup","subtask":"cleanup"}],"task":"staging","type":"ProgressSteps"}`;
  t.like(guestProgress('n', staging), { task: 'staging', steps: 2, stepsTotal: 3, subtask: 'Removing old images' });
  t.is(guestProgress('n', 'devpivot-progress: {"type":"Start","version":"0.1.0"}'), undefined, 'Start says nothing');
  t.is(guestProgress('n', `devpivot-progress: ${pulling(1, 0).slice(0, 80)}`), undefined, 'a line cut short');
});

test("rpm-ostree's per-layer line is a guest.progress; the plain reporter prints steps, not byte updates", (t) => {
  const event = guestProgress('n', 'rpm-ostree[612]: [1/2] Fetching ostree chunk 24b128a8bf211836b25 (4.3 kB)...done');
  t.deepEqual(event, {
    kind: 'guest.progress',
    node: 'n',
    tool: 'rpm-ostree',
    task: 'pulling',
    steps: 1,
    stepsTotal: 2,
    subtask: 'ostree chunk 24b128a8bf211836b25 (4.3 kB)',
  });
  t.is(formatPlain({ ...event!, at: 1 }), 'n: rpm-ostree pulling 1/2: ostree chunk 24b128a8bf211836b25 (4.3 kB)');
  t.is(formatPlain({ ...guestProgress('n', `devpivot-progress: ${pulling(1200, 0)}`)!, at: 1 }), null);
  t.regex(
    formatPlain({ ...guestProgress('n', `devpivot-progress: ${pulling(4300, 1)}`)!, at: 1 }) ?? '',
    /^n: bootc pulling 1\/1 \(0\.0 MiB of 0\.0 MiB\)/,
  );
});
