/**
 * `devpivot run --shard I/N`: which scenario files shard I of N runs. Pure (no file is read; `cwd` is passed).
 *
 * Contract:
 * - Files are deduplicated by their path relative to `cwd` (`scenarios/a.yaml`, `./scenarios/a.yaml` and its
 *   absolute path are one file, kept as first given) and sorted by that key (code-unit order, not the locale's),
 *   so neither the order of the files on the command line nor a file given twice changes the assignment.
 * - The N shards of one list are a partition of it: every file is in exactly one shard, for every N ≥ 1.
 * - The assignment is greedy longest-processing-time-first: files by weight, heaviest first (ties: key order),
 *   each to the shard with the least total weight (ties: fewer files, then the lower index). Without timings
 *   every weight is 1: that is round-robin over the sorted list, and shard sizes differ by at most one file.
 *   With timings a file's weight is its recorded seconds; a file with none gets the mean of the known ones
 *   (1 when none is known).
 * - A shard's files are returned in key order, the order they run in. A shard may be empty (N > files).
 */
import { basename, extname, relative, resolve, sep } from 'node:path';
import { UsageError } from '../core/errors.js';

export interface Shard {
  /** 1-based: shard 1/2 and 2/2. */
  index: number;
  count: number;
}

export const formatShard = (shard: Shard): string => `${shard.index}/${shard.count}`;

/** `--shard I/N` as written: two decimal integers with 1 ≤ I ≤ N; anything else is a usage error (exit 2). */
export function parseShard(text: string): Shard {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  const example = 'write --shard INDEX/COUNT with 1 ≤ INDEX ≤ COUNT, e.g. --shard 1/2 and --shard 2/2';
  if (!match) throw new UsageError(`--shard '${text}' is not INDEX/COUNT`, example, 'SHARD_INVALID');
  const index = Number(match[1]);
  const count = Number(match[2]);
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(count))
    throw new UsageError(`--shard '${text}': the numbers are too large`, example, 'SHARD_INVALID');
  if (count < 1)
    throw new UsageError(`--shard '${text}': the shard count must be at least 1`, example, 'SHARD_INVALID');
  if (index < 1)
    throw new UsageError(
      `--shard '${text}': shards are numbered from 1`,
      `the shards of ${count} are 1/${count} … ${count}/${count}`,
      'SHARD_INVALID',
    );
  if (index > count)
    throw new UsageError(
      `--shard '${text}': shard ${index} is past the count ${count}`,
      `the shards of ${count} are 1/${count} … ${count}/${count}`,
      'SHARD_INVALID',
    );
  return { index, count };
}

/** The key a file is deduplicated and sorted by: its path relative to `cwd`, with `/` separators. */
export function shardKey(file: string, cwd: string): string {
  return relative(cwd, resolve(cwd, file)).split(sep).join('/');
}

/** What a JUnit report recorded for one scenario run (report/junit-timings.ts). */
export interface RecordedSuite {
  /** The testsuite's name: `devpivot.<scenario name>`. */
  name: string;
  /** The scenario file, when the report says (devpivot writes it as the testsuite's `file` attribute). */
  file?: string;
  seconds: number;
}

/**
 * Seconds per file key, from recorded testsuites: matched by their `file` attribute, else (reports without it)
 * by the name `devpivot.<file name without extension>`, the default scenario name. A file recorded more than
 * once (several reports) counts its longest time.
 */
export function recordedSeconds(files: readonly string[], suites: readonly RecordedSuite[], cwd: string) {
  const keys = new Set(files.map((file) => shardKey(file, cwd)));
  const byName = new Map<string, string[]>();
  for (const key of keys) {
    const name = `devpivot.${basename(key, extname(key))}`;
    byName.set(name, [...(byName.get(name) ?? []), key]);
  }
  const seconds = new Map<string, number>();
  const record = (key: string, value: number) => seconds.set(key, Math.max(value, seconds.get(key) ?? 0));
  for (const suite of suites) {
    if (suite.file !== undefined) {
      const key = shardKey(suite.file, cwd);
      if (keys.has(key)) record(key, suite.seconds);
    } else {
      // A name is ambiguous when two files share it; such a time is not used.
      const named = byName.get(suite.name);
      if (named?.length === 1) record(named[0]!, suite.seconds);
    }
  }
  return seconds;
}

const compareKeys = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Every shard's files, `count` lists (see the contract above). `seconds` maps a file key (shardKey) to its
 * recorded time; without it (or empty) every file weighs the same.
 */
export function assignShards(
  files: readonly string[],
  count: number,
  options: { cwd: string; seconds?: ReadonlyMap<string, number> },
): string[][] {
  const unique = new Map<string, string>();
  for (const file of files) {
    const key = shardKey(file, options.cwd);
    if (!unique.has(key)) unique.set(key, file);
  }
  const known = [...unique.keys()].flatMap((key) => {
    const value = options.seconds?.get(key);
    return value === undefined ? [] : [value];
  });
  const fallback = known.length > 0 ? known.reduce((sum, value) => sum + value, 0) / known.length : 1;
  const items = [...unique].map(([key, file]) => ({ key, file, weight: options.seconds?.get(key) ?? fallback }));
  items.sort((a, b) => b.weight - a.weight || compareKeys(a.key, b.key));
  const shards = Array.from({ length: count }, () => ({ load: 0, items: [] as typeof items }));
  for (const item of items) {
    let best = shards[0]!;
    for (const shard of shards)
      if (shard.load < best.load || (shard.load === best.load && shard.items.length < best.items.length)) best = shard;
    best.load += item.weight;
    best.items.push(item);
  }
  return shards.map((shard) => shard.items.sort((a, b) => compareKeys(a.key, b.key)).map((item) => item.file));
}

/** Shard `shard`'s files, in the order they run. */
export function shardFiles(
  files: readonly string[],
  shard: Shard,
  options: { cwd: string; seconds?: ReadonlyMap<string, number> },
): string[] {
  return assignShards(files, shard.count, options)[shard.index - 1]!;
}
