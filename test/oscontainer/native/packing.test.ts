/** ostree-ext's basic_packing as packing.ts implements it: the shape of the bins for the cases it distinguishes. */
import test from 'ava';
import { basicPacking, binName, type Component, MAX_FREQUENCY } from '../../../src/oscontainer/native/packing.js';

const component = (identifier: string, size: number, changeFrequency = 0): Component => ({
  identifier,
  name: identifier.split('-')[0]!,
  changeFrequency,
  size,
});
const bySize = (list: Component[]) => [...list].sort((a, b) => b.size - a.size);

test('fewer bins than ostree-ext allows is an error', (t) => {
  t.throws(() => basicPacking([component('a-1', 1)], 3), { message: /3 layers are too few/ });
});

test('fewer components than bins: one bin each, then the empty bin for new packages', (t) => {
  const list = bySize([component('a-1', 30), component('b-1', 20), component('c-1', 10)]);
  const bins = basicPacking(list, 8);
  t.deepEqual(
    bins.map((bin) => bin.map((c) => c.identifier)),
    [['a-1'], ['b-1'], ['c-1'], []],
  );
  t.is(binName(bins[3]!), 'Reserved for new packages');
});

test('many components: each in exactly one of at most N bins, outliers alone, max-frequency content last', (t) => {
  const list = bySize([
    component('huge-1', 50_000_000),
    ...Array.from({ length: 40 }, (_, i) => component(`pkg${i}-1`, 100_000 + i * 5_000)),
    ...Array.from({ length: 10 }, (_, i) => component(`tiny${i}-1`, 100 + i)),
    component('rpmostree-unpackaged-content', 2_000_000, MAX_FREQUENCY),
    component('initramfs (kernel 6.1)', 3_000_000, MAX_FREQUENCY),
  ]);
  const bins = basicPacking(list, 10);
  t.true(bins.length <= 10, `${bins.length} bins`);
  const placed = bins.flat().map((c) => c.identifier);
  t.is(placed.length, list.length);
  t.is(new Set(placed).size, list.length);
  t.deepEqual(bins.at(-1), []);
  t.deepEqual(
    bins
      .at(-2)!
      .map((c) => c.identifier)
      .sort(),
    ['initramfs (kernel 6.1)', 'rpmostree-unpackaged-content'],
  );
  t.true(
    bins.some((bin) => bin.length === 1 && bin[0]!.identifier === 'huge-1'),
    'the size outlier has a bin of its own',
  );
  const tinyBin = bins.find((bin) => bin.some((c) => c.identifier === 'tiny0-1'))!;
  t.true(
    tinyBin.every((c) => c.identifier.startsWith('tiny')),
    'the smallest share the low-size bin, nothing else',
  );
  t.is(binName(tinyBin), '10 components');
  t.is(binName([component('a-1', 1), component('b-1', 1)]), 'a-1 and b-1');
});
