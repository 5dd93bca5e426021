import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test.serial('mcd-firstboot-native: the MCD rebases v1 to a native v2 through rpm-ostree (4.13 layered)', async (t) => {
  const run = await runScenarioCli('mcd-firstboot-native');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(run.steps, [
    '✓ prepare',
    '✓ up',
    '✓ expect node1 ignition within 3m',
    '✓ expect node1 console /rpm-ostree.go:\\d+\\] Executing rebase to \\S+/ within 8m',
    '✓ expect node1 pivot.staged within 8m',
    '✓ expect node1 booted v2 within 5m',
    '✓ assert node1 booted v2 reboots=1 failed=false',
    "✓ ssh node1 'test -e /etc/ignition-machine-config-encapsulated.json.ba...' =~ /done/ within 3m",
    '✓ pivot node1 to v2',
    '✓ expect node1 pivot.skipped within 3m',
    '✓ assert node1 booted v2 reboots=1 failed=false',
  ]);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  // the same image again: refused by rpm-ostree before any pull (the same digest), not a pivot
  const skipped = run.events.flatMap((e) => (e.kind === 'guest.pivot.skipped' ? [e.reason] : []));
  t.is(skipped.length, 1, skipped.join('\n'));
  const console = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  t.true(console.some((line) => /Running: rpm-ostree cleanup -p/.test(line)));
  t.true(console.some((line) => /Pulling manifest: ostree-unverified-registry:/.test(line)));
  t.deepEqual(leftoverDomains('mcd-firstboot-native'), []);
});
