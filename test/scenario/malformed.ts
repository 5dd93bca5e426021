/** The table of malformed scenario files (test/scenario/malformed/*.yaml): each ends with `# expect:` lines. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../helpers/cli.js';

export const MALFORMED_DIR = join(repoRoot, 'test', 'scenario', 'malformed');

export interface Expected {
  line: number;
  /** Absent when the expectation names only a line (`# expect: 2: YAML syntax`). */
  col?: number;
  /** A part of `message (hint)`. */
  text: string;
}

export interface MalformedFile {
  name: string;
  path: string;
  expected: Expected[];
}

export function malformedFiles(): MalformedFile[] {
  return readdirSync(MALFORMED_DIR)
    .filter((name) => name.endsWith('.yaml'))
    .sort()
    .map((name) => {
      const path = join(MALFORMED_DIR, name);
      const expected = readFileSync(path, 'utf8')
        .split('\n')
        .flatMap((line) => {
          const match = /^# expect: (\d+):(\d*) (.+)$/.exec(line);
          if (!match) return [];
          return [{ line: Number(match[1]), ...(match[2] ? { col: Number(match[2]) } : {}), text: match[3]! }];
        });
      return { name, path, expected };
    });
}
