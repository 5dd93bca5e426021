import { Writable } from 'node:stream';
import test from 'ava';
import { showImageProgress } from '../../src/cli/image-progress.js';
import { EventBus } from '../../src/core/bus.js';

function sink(isTTY: boolean) {
  let text = '';
  const stream = Object.assign(
    new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    }),
    { isTTY },
  );
  return { stream, text: () => text };
}

const emit = (bus: EventBus, done: number, total: number | null, phase = 'layer') =>
  bus.emit({ kind: 'image.progress', ref: 'r', phase, done, total });

test('not a TTY: one plain line per 10% step and phase', (t) => {
  const bus = new EventBus();
  const out = sink(false);
  const stop = showImageProgress(bus, out.stream);
  for (let done = 0; done <= 100; done += 1) emit(bus, done * 1e6, 100e6);
  emit(bus, 0, null, 'export');
  stop();
  emit(bus, 5, 10); // after stop: ignored
  const lines = out.text().trim().split('\n');
  t.is(lines.length, 12);
  t.is(lines[0], 'layer: 0% (0.0 MB / 100.0 MB)');
  t.is(lines[10], 'layer: 100% (100.0 MB / 100.0 MB)');
  t.is(lines[11], 'export: … (0.0 MB)');
});

test('a TTY: one line rewritten in place, cleared at the end', (t) => {
  const bus = new EventBus();
  const out = sink(true);
  const stop = showImageProgress(bus, out.stream);
  emit(bus, 1, 4);
  emit(bus, 2, 4);
  stop();
  t.is(out.text(), '\r\x1b[2Klayer: 25% (0.0 MB / 0.0 MB)\r\x1b[2Klayer: 50% (0.0 MB / 0.0 MB)\r\x1b[2K');
});
