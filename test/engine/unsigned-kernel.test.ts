/**
 * The unsigned-kernel rootfs (src/engine/unsigned-kernel.ts) stopped while its ostree checkout runs (Ctrl-C during
 * prepare): the checkout is ended at once, the stop's reason thrown and nothing left under the parent. An ostree
 * stand-in that does not finish within the test takes the tool's place on PATH.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { unsignedKernelRootfs } from '../../src/engine/unsigned-kernel.js';
import { slowTool, stopSoon, withPathFirst } from '../helpers/slow-tool.js';
import { tempDir } from '../helpers/temp.js';

test.serial('stopped during the checkout: ostree is ended, the reason thrown, the checkout removed', async (t) => {
  t.timeout(10_000);
  await withPathFirst(slowTool('ostree'), async () => {
    const parent = tempDir('devpivot-unsigned-');
    await t.throwsAsync(unsignedKernelRootfs(join(parent, 'repo'), 'a'.repeat(64), parent, stopSoon()), {
      message: 'interrupted by SIGINT',
    });
    t.deepEqual(readdirSync(parent), []);
  });
});
