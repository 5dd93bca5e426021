/**
 * `devpivot run --shard-timings FILE`: the time each scenario took in an earlier run's JUnit report.
 *
 * A scenario file maps to a `<testsuite>` element: devpivot writes one per scenario run (junit.ts), named
 * `devpivot.<scenario name>`, with the run's seconds as `time` and the file as `file`. Testcases (steps and
 * nodes) are not looked at. This is a small parser for the start tags of that JUnit (and of other writers that
 * keep to `<testsuite name=… time=…>`), not a general XML parser: no DTDs, entities are the five predefined ones
 * and numeric references. Anything it cannot read is a SHARD_TIMINGS_INVALID usage error (exit 2) naming the
 * file and what is wrong.
 */
import { UsageError } from '../core/errors.js';

export interface SuiteTiming {
  name: string;
  file?: string;
  seconds: number;
}

const ATTRIBUTE = /([A-Za-z_:][\w.:-]*)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/y;
const SECONDS = /^\s*\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s*$/;

function decode(value: string): string | undefined {
  if (/&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/.test(value)) return undefined;
  return value.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number.parseInt(entity.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[entity]!;
  });
}

/** The attributes of a start tag's body (what follows the element name), or a description of the problem. */
function attributes(body: string): Record<string, string> | string {
  const found: Record<string, string> = {};
  let pos = 0;
  for (;;) {
    const space = /\s*/y;
    space.lastIndex = pos;
    space.exec(body);
    pos = space.lastIndex;
    if (pos >= body.length || body.slice(pos) === '/') return found;
    ATTRIBUTE.lastIndex = pos;
    const match = ATTRIBUTE.exec(body);
    if (!match) return `cannot read the attributes at '${body.slice(pos, pos + 30)}'`;
    const value = decode(match[2] ?? match[3] ?? '');
    if (value === undefined) return `attribute ${match[1]} has a bad entity`;
    if (match[1]! in found) return `attribute ${match[1]} is given twice`;
    found[match[1]!] = value;
    pos = ATTRIBUTE.lastIndex;
  }
}

/** Every `<testsuite>` of a JUnit document with its name, file and seconds. `source` names it in errors. */
export function parseJunitTimings(xml: string, source: string): SuiteTiming[] {
  const fail = (what: string) =>
    new UsageError(`--shard-timings ${source}: ${what}`, undefined, 'SHARD_TIMINGS_INVALID');
  const text = xml.replace(/^\uFEFF/, '');
  if (!/^\s*</.test(text)) throw fail('not XML (a JUnit report starts with <?xml or <testsuites)');
  const suites: SuiteTiming[] = [];
  const tag = /<testsuite(?=[\s/>])([^>]*)>/g;
  for (const match of text.matchAll(tag)) {
    const line = text.slice(0, match.index).split('\n').length;
    const found = attributes(match[1]!);
    if (typeof found === 'string') throw fail(`line ${line}: <testsuite>: ${found}`);
    const name = found.name;
    if (name === undefined || name === '') throw fail(`line ${line}: a <testsuite> without a name attribute`);
    if (found.time === undefined) throw fail(`line ${line}: testsuite '${name}' has no time attribute`);
    if (!SECONDS.test(found.time) || !Number.isFinite(Number(found.time)))
      throw fail(`line ${line}: testsuite '${name}' has time="${found.time}", not a number of seconds`);
    suites.push({ name, ...(found.file ? { file: found.file } : {}), seconds: Number(found.time) });
  }
  if (suites.length === 0) throw fail('no <testsuite> element: not a JUnit report');
  return suites;
}
