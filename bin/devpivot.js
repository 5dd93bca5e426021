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
// Signals, the exit status and the exit itself: src/cli/main.ts `cli` (first SIGINT/SIGTERM cleans up, a second
// one exits at once; see src/cli/interrupts.ts).
const { cli } = await import(entry.href);
await cli(process.argv.slice(2));
