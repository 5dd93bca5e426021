/**
 * The legacy driver end to end, line by line on the guest's console: first-boot Ignition, systemd running the
 * units it wrote, openshift/pivot's protocol (origin comparison, the kernel-args whitelist, the staged deployment
 * finalized at shutdown with the /etc merge, one reboot through mcd-write-pivot-reboot.service), and a second boot
 * that is no first boot and does not pivot again. (This was fixture.vm.test.ts's "first boot" test, which ran the
 * same pivot outside devpivot's CLI.)
 *
 * The same VM carries the checks of two files that booted the same v1 and made the same legacy pivot to v2:
 * old-to-new.vm.test.ts (the phases, the target, the layer pulled; the shipped old-to-new.yaml's own steps are
 * checked by rootless-pivot, and its Ctrl-C test is in cli/exit-codes.vm) and e2e/guest-network.vm.test.ts (one
 * more `ssh` step: the pull worked through devpivot's filter, while another port of the host's loopback is
 * refused to the guest and named). Nothing leaves 127.0.0.1.
 *
 * And the installer's override knob (this was os-image.vm.test.ts): the scenario runs as `devpivot up FILE
 * --os-image 127.0.0.1:PORT/…@sha256:…` (osImageURLOverride), its pivot target replaced by that image. The image lives
 * in another registry on the host's loopback, which the guest cannot reach as written: devpivot pulls it into the
 * embedded registry and the guest pivots to it there, by the same digest.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import { loadFixture } from '../../src/fixture/fixture.js';
import { buildAndPush } from '../../src/oscontainer/index.js';
import { startRegistry } from '../../src/registry/index.js';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

const MARKER = 'devpivot-kernel-args-issue';
/** A glog line of pivot (openshift/pivot's `Lmmdd hh:mm:ss.uuuuuu pid file:line] text`) as the console shows it. */
const glog = (level: string, file: string, text: string) =>
  new RegExp(`pivot\\[\\d+\\]: ${level}\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} +\\d+ ${file}\\] ${text}`);
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

test('kernel-args: the whitelisted argument reaches the new deployment, the other is refused; up --os-image pivots to the given pullspec, by its digest', async (t) => {
  t.timeout(25 * 60_000);
  const fixture = await loadFixture();
  const commitOf = (version: string) => fixture.versions.find((entry) => entry.version === version)!.commit;
  // (os-image) fixture v2 in another registry on the host's loopback, named by its digest there
  const dir = tempDir('devpivot-kernel-args-e2e-', t);
  const otherRegistry = await startRegistry({ storage: join(dir, 'registry') });
  t.teardown(() => otherRegistry.stop());
  const image = await buildAndPush({
    repo: fixture.repo,
    commit: commitOf('2'),
    target: `${otherRegistry.address}/os/fixture:v2`,
  });
  const digest = image.pinned.slice(image.pinned.indexOf('@') + 1);
  // Another port of the host's loopback, which the guest must not reach (guests reach only the registry).
  let connections = 0;
  const other = createServer((socket) => {
    connections += 1;
    socket.end('HTTP/1.0 200 OK\r\n\r\nreached\n');
  });
  t.teardown(() => other.close());
  const port = await new Promise<number>((resolve) =>
    other.listen(0, '127.0.0.1', () => resolve((other.address() as { port: number }).port)),
  );
  // The shipped scenario, its steps ending with the v2 checks, and one more step: the guest tries that port.
  const shipped = readFileSync(`${repoRoot}scenarios/kernel-args.yaml`, 'utf8');
  t.regex(shipped, /\n {2}- wait: 10s\n$/, 'the shipped steps end the file');
  const file = join(dir, 'kernel-args.yaml');
  const nc = `busybox nc -w 5 10.0.2.2 ${port} </dev/null 2>&1; echo rc=$?`;
  writeFileSync(file, `${shipped}  - ssh: { run: "${nc}", expect: 'rc=[1-9]', within: 3m }\n`);

  const run = await runScenarioCli('kernel-args', {
    command: ['up', file, '--os-image', image.pinned],
    timeoutMs: 24 * 60_000,
  });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);
  // (old-to-new) the pivot's phases as devpivot reports them, and the layer pulled in full
  const phases = run.events.flatMap((e) => (e.kind === 'guest.pivot' ? [e.phase] : []));
  t.deepEqual(phases, ['pulling', 'staging', 'staged', 'rebooting']);
  t.true(
    run.events.some(
      (e) => e.kind === 'blob.progress' && e.node === 'node1' && e.sent === e.total && e.total > 1_000_000,
    ),
    'the layer was pulled through the filter',
  );
  // (guest-network) nothing reached the other port, and the run names the blocked destination once
  t.true(run.steps.at(-1)?.startsWith(`✓ ssh node1 'busybox nc -w 5 10.0.2.2 ${port} `), run.steps.join('\n'));
  t.is(connections, 0, 'nothing reached the other loopback port');
  const blocked = run.events.filter(
    (e) =>
      e.kind === 'log' &&
      e.message === `node node1 tried to reach tcp 10.0.2.2:${port}: blocked (guests reach only the registry)`,
  );
  t.is(blocked.length, 1, 'the run names the blocked destination once');
  const lines = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  /** The index of the first line at or after `from` matching `pattern`; fails the test (-1) when there is none. */
  const find = (pattern: RegExp, from = 0, message = String(pattern)) => {
    const index = lines.findIndex((line, i) => i >= from && pattern.test(line));
    t.true(index >= 0, message);
    return index;
  };

  // The whitelist: nosmt is applied (rpm-ostree kargs), the other ADD is refused, the DELETE of an argument not
  // on the command line is skipped.
  find(glog('I', 'root.go:134', 'devpivot\\.test=kargs not a whitelisted kernel argument$'));
  find(glog('I', 'root.go:151', 'quiet not a whitelisted kernel argument$'));
  find(glog('I', 'run.go:16', 'Running: rpm-ostree kargs --append=nosmt$'));
  const cmdlines = lines.filter((line) => /\] Command line: /.test(line));
  t.is(cmdlines.length, 2);
  t.false(cmdlines[0]!.includes(' nosmt'));
  t.true(cmdlines[1]!.includes(' nosmt'), cmdlines[1]);
  t.false(
    cmdlines.some((line) => line.includes('devpivot.test=kargs')),
    'the refused argument is on no command line',
  );

  // Boot 1: Ignition, then systemd runs the units it wrote (the report, enabled through 20-ignition.preset, and the
  // MCS's mcd-write-pivot-reboot.service); pivot compares the booted origin, pulls, stages, reboots.
  const target = run.events.find((e): e is Stamped<EventOf<'guest.pivot'>> => e.kind === 'guest.pivot')?.target ?? '';
  // (os-image) the target is the given image, in the embedded registry, by the same digest
  for (const e of run.events)
    if (e.kind === 'guest.pivot') t.regex(e.target, new RegExp(`^10\\.0\\.2\\.2:\\d+/devpivot/os/fixture@${digest}$`));
  t.regex(target, new RegExp(`^10\\.0\\.2\\.2:\\d+/devpivot/os/fixture@${digest}$`));
  const bootImage = `fixture.invalid/fixture-coreos@sha256:${commitOf('1')}`;
  const ignitionDone = find(/Reached target ignition-complete\.target - Ignition Complete\./);
  find(/systemd\[1\]: Detected first boot\./, ignitionDone);
  find(/devpivot-report: \{"event":"booted"/, ignitionDone);
  find(/Started mcd-write-pivot-reboot\.service/, ignitionDone);
  const pulling = find(glog('I', 'run.go:16', `Running: podman pull -q ${literal(target)}$`));
  find(glog('I', 'root.go:263', `Previous pivot: ${literal(bootImage)}$`));
  const pivoting = find(glog('I', 'root.go:333', `Pivoting to: 2 \\(${commitOf('2')}\\)$`), pulling);
  find(/pivot\[\d+\]: Staging deployment\.\.\.done/, pivoting);
  const reboot = find(glog('I', 'run.go:16', 'Running: systemctl reboot$'));
  // ostree's own unit writes the staged deployment at shutdown, merging /etc then.
  find(/ostree\[\d+\]: Copying \/etc changes: /, reboot);
  find(/ostree\[\d+\]: Transaction complete; bootconfig swap: yes/, reboot);
  const restart = find(/reboot: Restarting system/, reboot);
  const second = lines.slice(restart);
  find(/devpivot-report: \{"event":"booted"/, restart);
  // sshd starts on v2 (the console shows no "Started" line once the getty is up) and serves logins: the ssh step.
  find(/Starting ssh\.service - OpenBSD Secure Shell server\.\.\./, restart);
  t.true(
    run.steps.includes(`✓ ssh node1 'grep ^VERSION= /etc/os-release' =~ /VERSION="2"/ within 3m`),
    run.steps.join('\n'),
  );
  // The host keys came from Ignition (devpivot made and pinned them): sshd-keygen@.service's condition skipped it
  // on the first boot, so none of its "Server Key Generation" lines, and the ssh step (StrictHostKeyChecking=yes
  // for a pinned node) logged in: the node served the pinned keys.
  t.false(
    lines.some((line) => /Server Key Generation/.test(line)),
    'no host key was made on the node',
  );
  // (os-image) the shipped steps' `booted: fixture:2` became the given pullspec
  t.true(run.steps.includes(`✓ assert node1 booted ${image.pinned} reboots=1`), run.steps.join('\n'));

  // The Ignition-written /etc/issue is shown by the serial getty on both boots (and was merged into v2's /etc).
  t.true(lines.slice(0, restart).includes(MARKER), 'getty shows /etc/issue on boot 1');
  t.true(second.includes(MARKER), 'getty shows /etc/issue on boot 2');
  // Boot 2: not a first boot (the machine-id was committed and merged), Ignition does not run, the pullspec was
  // deleted before the /etc merge: pivot.service's condition fails and nothing pivots again.
  t.false(second.some((line) => /Detected first boot|mcd-write-pivot-reboot|ignition-complete/.test(line)));
  t.false(
    second.some((line) => /pivot\[\d+\]/.test(line)),
    'pivot does not run on the new deployment',
  );

  const boots = run.events.filter((e): e is Stamped<EventOf<'guest.booted'>> => e.kind === 'guest.booted');
  t.is(boots.length, 2);
  t.like(boots[0], { version: '1', commit: commitOf('1'), image: bootImage });
  t.like(boots[1], { version: '2', commit: commitOf('2'), image: target });
  for (const boot of boots) t.regex(String(boot.bootId), /^[0-9a-f-]{36}$/);
  t.not(boots[0]!.bootId, boots[1]!.bootId);
  t.deepEqual(leftoverDomains('kernel-args'), []);
});
