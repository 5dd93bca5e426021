/**
 * How ostree-ext packs components into layers when it chunks an image without a prior build
 * (bootc-dev/bootc 534c76ea `crates/ostree-ext/src/chunking.rs` `basic_packing` and
 * `get_partitions_with_threshold`, `statistics.rs`), as a pure function of the components' sizes and change
 * frequencies:
 *
 * - fewer components than bins: one bin each, plus an empty bin for new packages;
 * - otherwise the components of maximum change frequency (u32::MAX: unpackaged content, the initramfs) go to one
 *   bin at the end; the rest are split by size with the median absolute deviation (threshold 2): the largest
 *   get a bin each (at most 60 % of the bins left after the low-size, new-package and max-frequency ones), the
 *   smallest share one, and the middle is split again by mean and standard deviation of size and frequency into
 *   partitions filled `per-bin` at a time, adjacent ones merged from the end until the count fits;
 * - an empty bin last ("Reserved for new packages").
 *
 * The prior-build path (`basic_packing_with_prior_build`, which keeps an earlier image's bins) is not taken:
 * devpivot gets stable chunks from reproducible input instead (the same packages give the same bins).
 */
import { DevpivotError } from '../../core/errors.js';

/** ostree-ext's MAX_CHUNKS: the default number of bins. */
export const MAX_CHUNKS = 64;
/** ostree-ext's MIN_CHUNKED_LAYERS: fewer bins than this is an error. */
export const MIN_CHUNKED_LAYERS = 4;
/** `u32::MAX`: content that changes with every build. */
export const MAX_FREQUENCY = 4294967295;

export interface Component {
  /** Unique identifier (rpm-ostree: the NEVRA); names a single-component layer. */
  identifier: string;
  /** The package name, as the `ostree.components` annotation lists it. */
  name: string;
  changeFrequency: number;
  /** Bytes of its content objects. */
  size: number;
}

const HIGH_SIZE_CUTOFF = 0.6;
const THRESHOLD = 2;

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
function stdDeviation(values: number[]): number {
  const m = mean(values);
  return Math.sqrt(values.reduce((sum, v) => sum + (m - v) * (m - v), 0) / values.length);
}
/** Median of `sorted` as statistics.rs takes it (the data is not sorted again: callers pass it ordered). */
function median(sorted: number[]): number {
  const n = sorted.length;
  return n % 2 === 1 ? sorted[(n - 1) / 2]! : 0.5 * (sorted[n / 2 - 1]! + sorted[n / 2]!);
}
function medianAbsoluteDeviation(data: number[]): { median: number; mad: number } {
  const m = median(data);
  const deviations = data.map((v) => Math.abs(v - m)).sort((a, b) => a - b);
  return { median: m, mad: median(deviations) };
}

/** Partition names, in the order a BTreeMap of them iterates. */
const HIGH = '1hs';
const LOW = '2ls';

function partitions(components: Component[], highBins: number): Map<string, Component[]> {
  const parts = new Map<string, Component[]>();
  const add = (key: string, c: Component) => {
    const list = parts.get(key);
    if (list) list.push(c);
    else parts.set(key, [c]);
  };
  const { median: med, mad } = medianAbsoluteDeviation(components.map((c) => c.size));
  const lowLimit = 0.5 * Math.abs(med - THRESHOLD * mad);
  const highLimit = med + THRESHOLD * mad;
  let high: Component[] = [];
  const middle: Component[] = [];
  for (const c of components) {
    if (c.size >= highLimit) high.push(c);
    else if (c.size <= lowLimit) add(LOW, c);
    else middle.push(c);
  }
  const remaining = high.slice(highBins);
  high = high.slice(0, highBins);
  remaining.push(...middle);
  parts.set(HIGH, high);
  // A stable sort by frequency, as Rust's sort_by.
  remaining.sort((a, b) => a.changeFrequency - b.changeFrequency);
  if (remaining.length === 0)
    throw new DevpivotError('CHUNKING_FAILED', 'cannot partition the components: none of middle size', {
      hint: 'use fewer layers',
    });
  const sizes = remaining.map((c) => c.size);
  const freqs = remaining.map((c) => c.changeFrequency);
  const freqMean = mean(freqs);
  const freqStd = stdDeviation(freqs);
  const sizeMean = mean(sizes);
  const sizeStd = stdDeviation(sizes);
  const freqLow = 0.5 * Math.abs(freqMean - THRESHOLD * freqStd);
  const freqHigh = freqMean + THRESHOLD * freqStd;
  const sizeLow = 0.5 * Math.abs(sizeMean - THRESHOLD * sizeStd);
  const sizeHigh = sizeMean + THRESHOLD * sizeStd;
  for (const c of remaining) {
    const size = c.size >= sizeHigh ? 'hs' : c.size <= sizeLow ? 'ls' : 'ms';
    const freq = c.changeFrequency >= freqHigh ? '3hf' : c.changeFrequency <= freqLow ? '5lf' : '4mf';
    add(`${freq}_${size}`, c);
  }
  return new Map([...parts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Bins of components for `binCount` layers. `components` must be ordered by size, largest first (ties in
 * identifier order), as ostree-ext's `compute_sizes` orders them.
 */
export function basicPacking(components: Component[], binCount: number): Component[][] {
  if (binCount < MIN_CHUNKED_LAYERS)
    throw new DevpivotError('CHUNKING_TOO_FEW_LAYERS', `${binCount} layers are too few to chunk an image`, {
      hint: `ostree-ext chunks into at least ${MIN_CHUNKED_LAYERS} layers`,
    });
  if (components.length < binCount) {
    const bins = components.map((c) => [c]);
    if (components.length > 0) bins.push([]);
    return bins;
  }
  const bins: Component[][] = [];
  const regular = components.filter((c) => c.changeFrequency !== MAX_FREQUENCY);
  const maxFrequency = components.filter((c) => c.changeFrequency === MAX_FREQUENCY);
  if (regular.length > 0) {
    const lowBins = 1;
    const newBins = 1;
    const maxFrequencyBins = Math.min(maxFrequency.length, 1);
    const reserved = lowBins + newBins + maxFrequencyBins;
    const highBins = Math.floor(HIGH_SIZE_CUTOFF * (binCount - reserved));
    const middleBins = binCount - (highBins + reserved);
    const parts = partitions(regular, highBins);
    const lowCount = parts.get(LOW)?.length ?? 0;
    if (middleBins <= 0)
      throw new DevpivotError('CHUNKING_FAILED', `no bins left for middle-size components with ${binCount} layers`, {
        hint: `use at least ${MIN_CHUNKED_LAYERS} layers`,
      });
    const perBin = Math.floor((regular.length - highBins - lowCount) / middleBins);
    for (const [name, members] of parts) {
      if (name === HIGH) for (const c of members) bins.push([c]);
      else if (name === LOW) bins.push([...members]);
      else {
        let bin: Component[] = [];
        members.forEach((c, i) => {
          if (bin.length < perBin) bin.push(c);
          else {
            bins.push(bin);
            bin = [c];
          }
          if (i === members.length - 1 && bin.length > 0) {
            bins.push(bin);
            bin = [];
          }
        });
      }
    }
    // Merge neighbouring middle bins until the count fits: each pass walks the indexes first, first + 2, … below
    // the last (fixed when the pass starts) from the top, replacing bins i - 1 and i by their union, which lands
    // after the bin that followed them (ostree-ext removes both, then inserts at i).
    const limit = binCount - newBins - maxFrequencyBins;
    const first = lowBins + highBins;
    while (bins.length > limit) {
      const end = bins.length - 1;
      if (end <= first) break; // nothing left to merge (ostree-ext would loop forever here)
      for (let i = first + 2 * Math.floor((end - 1 - first) / 2); i >= first; i -= 2) {
        if (bins.length <= limit) break;
        const merged = [...bins[i - 1]!, ...bins[i]!];
        bins.splice(i - 1, 2);
        bins.splice(i, 0, merged);
      }
    }
  }
  if (maxFrequency.length > 0) bins.push(maxFrequency);
  bins.push([]);
  return bins;
}

/** A layer's name as ostree-ext's `process_mapping` gives it (its history entry). */
export function binName(bin: Component[]): string {
  if (bin.length === 0) return 'Reserved for new packages';
  if (bin.length <= 5) return bin.map((c) => c.identifier).join(' and ');
  return `${bin.length} components`;
}
