// Run a set-up command and show its progress as it goes: the lines that say what moved (a package fetched, unpacked,
// set up) are printed as they come, the rest is kept back; the last lines of everything are returned for a failure
// message. Zero dependencies, like setup.mjs, which imports it.
import { spawn } from 'node:child_process';

/**
 * What counts as progress, per tool. apt-get -q prints `Get:N URL SUITE PACKAGE ARCH VERSION [SIZE]` per download
 * and `Unpacking PACKAGE (VERSION) ...` / `Setting up PACKAGE (VERSION) ...` per package (dpkg's own lines).
 * npm ci with `--loglevel http` prints `npm http fetch GET 200 URL TIMEms` per request: counted, shown every 25.
 */
export const PROGRESS = {
  apt: (line) => (/^(Get:\d+ |Unpacking |Setting up )/.test(line) ? line : null),
  npm: () => {
    let fetched = 0;
    return (line) => {
      if (/^npm http fetch /.test(line)) {
        fetched++;
        return fetched % 25 === 0 ? `${fetched} packages fetched` : null;
      }
      return /^(added \d+ packages|npm warn )/i.test(line) ? line : null;
    };
  },
};

/**
 * @param {string} file
 * @param {string[]} args
 * @param {{ show: (line: string) => string | null, print: (line: string) => void, env?: NodeJS.ProcessEnv, cwd?: string }} options
 * @returns {Promise<{ status: number | null, tail: string[] }>}
 */
export function runWithProgress(file, args, options) {
  return new Promise((resolve) => {
    const tail = [];
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env, cwd: options.cwd });
    const onLine = (line) => {
      tail.push(line);
      if (tail.length > 15) tail.shift();
      const shown = options.show(line.trim());
      if (shown !== null) options.print(shown);
    };
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (text) => {
        const lines = (rest + text).split(/\r?\n|\r/);
        rest = lines.pop() ?? '';
        for (const line of lines) if (line.trim() !== '') onLine(line);
      });
      stream.on('end', () => {
        if (rest.trim() !== '') onLine(rest);
        rest = '';
      });
    }
    child.on('error', (error) => {
      tail.push(String(error.message));
      resolve({ status: null, tail });
    });
    child.on('close', (status) => resolve({ status, tail }));
  });
}
