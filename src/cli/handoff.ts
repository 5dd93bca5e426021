/**
 * A second Ctrl-C exits at once, so the removal of what the run created cannot wait for it: besides the
 * in-process best effort (the engine's emergency hook), the run hands its session over to a detached
 * `devpivot down --session ID --connect URI`, which finishes the removal after this process is gone (bounded by
 * coreutils `timeout` where there is one, so a hung daemon cannot keep it forever).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startDetached } from '../core/exec.js';

const BIN = fileURLToPath(new URL('../../../bin/devpivot.js', import.meta.url));
const TIMEOUT = ['/usr/bin/timeout', '/bin/timeout'].find((path) => existsSync(path));
/** How long the handed-over removal may take. */
const HANDOFF_LIMIT_S = 300;

export function handOffRemoval(sessionId: string, uri: string, env: NodeJS.ProcessEnv): number | undefined {
  const down = [process.execPath, BIN, 'down', '--session', sessionId, '--connect', uri];
  return TIMEOUT
    ? startDetached(TIMEOUT, [String(HANDOFF_LIMIT_S), ...down], { env })
    : startDetached(down[0]!, down.slice(1), { env });
}
