#!/usr/bin/env node
// Runs the compiled CLI (dist/) so that start-up stays fast; `npm run setup` builds it.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    "error[NOT_BUILT]: devpivot is not built (dist/ is missing)\nhint: run 'npm run setup' in the devpivot checkout\n",
  );
  process.exit(2);
}
const { main } = await import(entry.href);
const controller = new AbortController();
let signals = 0;
for (const name of ['SIGINT', 'SIGTERM']) {
  process.on(name, () => {
    // First signal: ask the running command to stop and clean up. Second: give up at once.
    if (++signals > 1) process.exit(130);
    controller.abort(new Error(`interrupted by ${name}`));
  });
}
process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  signal: controller.signal,
});
