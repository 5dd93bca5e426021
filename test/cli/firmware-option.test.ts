/**
 * `devpivot up --firmware FW` through the built CLI, without a VM: an unknown firmware is a usage error before
 * anything starts; a known one replaces every node's firmware once the scenario is valid.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { loadScenario } from '../../src/scenario/parse.js';
import { repoRoot, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

const UNREACHABLE = 'qemu+unix:///system?socket=/nonexistent/libvirt-sock';

test('--firmware efi: exit 2 naming the firmwares there are, nothing started', async (t) => {
  const dir = tempDir('devpivot-firmware-');
  const env = { DEVPIVOT_STATE_DIR: join(dir, 'state'), DEVPIVOT_CACHE_DIR: join(dir, 'cache') };
  const result = await runCli(['up', '--firmware', 'efi', '--json', '--connect', UNREACHABLE], { env });
  t.is(result.code, 2);
  t.regex(result.stderr, /error\[USAGE\]: --firmware efi: not a firmware/);
  t.regex(result.stderr, /hint: one of bios, uefi, uefi-secure/);
  t.is(result.stdout, '');
  t.deepEqual(readdirSync(dir), []);
});

test('the firmware override replaces every node firmware of a valid scenario', async (t) => {
  const file = `${repoRoot}scenarios/two-nodes.yaml`;
  const plain = await loadScenario(file);
  t.true(plain.nodes.every((node) => node.firmware === 'bios'));
  const secure = await loadScenario(file, undefined, { firmware: 'uefi-secure' });
  t.is(secure.nodes.length, plain.nodes.length);
  t.true(secure.nodes.every((node) => node.firmware === 'uefi-secure'));
});
