/**
 * scenarios/multi-hop.yaml: v1 → v2 by Ignition; a second request for the image the node runs is refused by pivot
 * (nothing staged, no reboot: this was already-at-target.vm.test.ts, which booted the same v1 and made the same
 * first pivot); a third request takes it to v3. One VM, three boots. The first hop's pull is hit by a registry
 * outage, and completes (this was registry-outage.vm.test.ts, which booted the same v1 and made the same legacy
 * pivot to v2).
 *
 * The first hop is also checked line by line on the guest's console (this was kernel-args.vm.test.ts, which booted
 * the same v1 and made the same legacy pivot): first-boot Ignition, systemd running the units it wrote,
 * openshift/pivot's protocol (origin comparison, the kernel-args whitelist, the staged deployment finalized at
 * shutdown with the /etc merge, one reboot through mcd-write-pivot-reboot.service), and a second boot that is no
 * first boot and does not pivot again by itself. It carried the checks of old-to-new.vm.test.ts (the phases, the
 * target, the layer pulled; the shipped old-to-new.yaml's own steps are checked by rootless-pivot, and its Ctrl-C
 * test is in cli/exit-codes.vm) and e2e/guest-network.vm.test.ts (one more `ssh` step: the pull worked through
 * devpivot's filter, while another port of the host's loopback is refused to the guest and named). Nothing leaves
 * 127.0.0.1.
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
import { glog } from '../helpers/glog.js';
import { tempDir } from '../helpers/temp.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

type Request = Stamped<EventOf<'registry.request'>>;

const MARKER = 'devpivot-kernel-args-issue';
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

test('multi-hop: v1 → v2 by Ignition (the registry stops during the pull and comes back; the pivot completes; the whitelisted kernel argument reaches v2, the other is refused; up --os-image pivots to the given pullspec, by its digest), the same image again is refused, → v3 over ssh; ssh sees each version', async (t) => {
  t.timeout(40 * 60_000);
  const fixture = await loadFixture();
  const commitOf = (version: string) => fixture.versions.find((entry) => entry.version === version)!.commit;
  // (os-image) fixture v2 in another registry on the host's loopback, named by its digest there
  const dir = tempDir('devpivot-multi-hop-e2e-', t);
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
  // The shipped scenario, its steps ending with the v3 checks, and one more step: the guest tries that port.
  const shipped = readFileSync(`${repoRoot}scenarios/multi-hop.yaml`, 'utf8');
  t.regex(
    shipped,
    /\n {2}- assert: \{ booted: fixture:3, reboots: 2, failed: false \}\n$/,
    'the shipped steps end the file',
  );
  const file = join(dir, 'multi-hop.yaml');
  const nc = `busybox nc -w 5 10.0.2.2 ${port} </dev/null 2>&1; echo rc=$?`;
  writeFileSync(file, `${shipped}  - ssh: { run: "${nc}", expect: 'rc=[1-9]', within: 3m }\n`);

  const run = await runScenarioCli('multi-hop', {
    command: ['up', file, '--os-image', image.pinned],
    timeoutMs: 38 * 60_000,
  });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(run.steps, [
    '✓ prepare',
    '✓ fault registry slow 1MiB/s',
    '✓ up',
    '✓ expect node1 pivot.pulling within 4m',
    '✓ wait 30s',
    '✓ fault registry down',
    '✓ wait 12s',
    '✓ fault registry up',
    '✓ fault registry clear',
    '✓ expect node1 pivot.staged within 10m',
    '✓ expect node1 console /devpivot\\.test=kargs not a whitelisted kernel argument/ within 2m',
    '✓ expect node1 console /Command line: .* nosmt/ within 5m',
    `✓ expect node1 booted ${image.pinned} within 5m`,
    `✓ ssh node1 'cat /etc/os-release' =~ /VERSION_ID="2"/ within 3m`,
    `✓ pivot node1 to ${image.pinned}`,
    '✓ expect node1 pivot.skipped within 3m',
    `✓ assert node1 booted ${image.pinned} reboots=1 failed=false`,
    '✓ pivot node1 to fixture:3',
    '✓ expect node1 pivot.staged within 5m',
    '✓ expect node1 booted fixture:3 within 10m',
    `✓ ssh node1 'cat /etc/os-release' =~ /VERSION_ID="3"/ within 3m`,
    '✓ assert node1 booted fixture:3 reboots=2 failed=false',
    `✓ ssh node1 '${nc}' =~ /rc=[1-9]/ within 3m`,
  ]);
  // One boot per version: the refused request rebooted nothing (another boot of v2 would be listed).
  t.deepEqual(bootedVersions(run.events), ['1', '2', '3']);
  const lines = run.events.flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []));
  /** The index of the first line at or after `from` matching `pattern`; fails the test (-1) when there is none. */
  const find = (pattern: RegExp, from = 0, message = String(pattern)) => {
    const index = lines.findIndex((line, i) => i >= from && pattern.test(line));
    t.true(index >= 0, message);
    return index;
  };

  // The request for the running image: pivot compared it with the booted origin and refused, once.
  const skipped = run.events.filter((e) => e.kind === 'guest.pivot.skipped');
  t.is(skipped.length, 1);
  t.regex(skipped[0] && 'reason' in skipped[0] ? skipped[0].reason : '', /already at target/);
  t.true(lines.some((line) => /root\.go:415\] Already at target pivot; exiting\.\.\./.test(line)));

  // The v3 hop is pivot's own work, started by pivot.service with the pullspec devpivot wrote.
  t.true(
    lines.some((line) => /root\.go:\d+\] Using image pullspec from \/etc\/pivot\/image-pullspec/.test(line)),
    'pivot read the pullspec file',
  );
  t.true(
    lines.some((line) =>
      new RegExp(`root\\.go:\\d+\\] Previous pivot: 10\\.0\\.2\\.2:\\d+/devpivot/os/fixture@${digest}$`).test(line),
    ),
    'pivot compared with the v2 origin of the first hop',
  );
  t.true(lines.some((line) => /Pivoting to: 3 \(/.test(line)));
  // Staged twice (v2, v3): the refused request added none. (os-image) The first target is the given image, in
  // the embedded registry, by the same digest.
  const targets = run.events.flatMap((e) => (e.kind === 'guest.pivot' && e.phase === 'staged' ? [e.target] : []));
  t.is(targets.length, 2);
  const target = targets[0] ?? '';
  t.regex(target, new RegExp(`^10\\.0\\.2\\.2:\\d+/devpivot/os/fixture@${digest}$`));
  t.regex(targets[1] ?? '', /\/devpivot\/fixture-3@sha256:[0-9a-f]{64}$/);

  // (old-to-new) the first hop's phases as devpivot reports them, and the layer pulled in full
  const v2Boot = run.events.findIndex((e) => e.kind === 'guest.booted' && e.version === '2');
  const firstHop = run.events.slice(0, v2Boot);
  const phases = firstHop.flatMap((e) => (e.kind === 'guest.pivot' ? [e.phase] : []));
  t.deepEqual(phases, ['pulling', 'staging', 'staged', 'rebooting']);
  for (const e of firstHop) if (e.kind === 'guest.pivot') t.is(e.target, target);
  t.true(
    run.events.some(
      (e) => e.kind === 'blob.progress' && e.node === 'node1' && e.sent === e.total && e.total > 1_000_000,
    ),
    'the layer was pulled through the filter',
  );

  // (registry-outage) stopped by the fault, and at the end; no failure
  const stops = run.events.filter((e) => e.kind === 'registry.stopped').length;
  t.true(stops >= 2, 'stopped by the fault, and at the end');
  t.false(run.events.some((e) => e.kind === 'guest.failure'));
  // The fault proves itself: a blob transfer was cut by the outage (the registry's log: fewer bytes sent than the
  // response promised), and the same blob was served in full afterwards (from the start, or the rest with Range).
  const blobGets = run.events.filter(
    (e): e is Request => e.kind === 'registry.request' && e.method === 'GET' && e.path.includes('/blobs/'),
  );
  const cut = blobGets.filter((e) => e.length !== undefined && e.bytes < e.length);
  const t0 = run.events[0]!.at;
  const timeline = run.events
    .filter(
      (e) =>
        /^(registry|guest|step\.(pass|fail))/.test(e.kind) &&
        !(e.kind === 'registry.request' && !e.path.includes('/blobs/')),
    )
    .map((e) => `${((e.at - t0) / 1000).toFixed(1)} ${e.kind} ${JSON.stringify(e).slice(0, 160)}`)
    .join('\n');
  t.true(cut.length >= 1, `a transfer was cut:\n${timeline}`);
  // The outage begins when the `fault: down` step starts (the end of the wait before it): stopping closes the open
  // transfers, whose `registry.request` events can come before the `registry.stopped` that follows them.
  const outage = run.events.find((e) => e.kind === 'step.pass' && e.name === 'wait 30s')!;
  for (const request of cut) {
    t.true(
      request.at >= outage.at,
      `cut once the outage began: ${request.path} ${request.bytes}/${request.length} at ${((request.at - t0) / 1000).toFixed(1)} s\n${timeline}`,
    );
    const later = blobGets.filter((e) => e.path === request.path && e.at > request.at && e.bytes === e.length);
    t.true(later.length >= 1, `${request.path} was served again in full after the cut`);
  }
  // And the guest saw it: its pull failed on the outage and was tried again (the pivot agent's retry line).
  const retry = lines.find((line) =>
    /skopeo: .*(connection refused|EOF|connection reset|broken pipe)|failed: exit status \d+; retrying/i.test(line),
  );
  t.truthy(retry, `a retry line on the console; last lines:\n${lines.slice(-30).join('\n')}`);
  t.log(`cut: ${cut.map((e) => `${e.bytes} of ${e.length} bytes`).join(', ')}; guest: ${retry}`);

  // (guest-network) nothing reached the other port, and the run names the blocked destination once
  t.is(connections, 0, 'nothing reached the other loopback port');
  const blocked = run.events.filter(
    (e) =>
      e.kind === 'log' &&
      e.message === `node node1 tried to reach tcp 10.0.2.2:${port}: blocked (guests reach only the registry)`,
  );
  t.is(blocked.length, 1, 'the run names the blocked destination once');

  // (kernel-args) The whitelist: nosmt is applied (rpm-ostree kargs), the other ADD is refused, the DELETE of an
  // argument not on the command line is skipped.
  find(glog('I', 'root.go:134', 'devpivot\\.test=kargs not a whitelisted kernel argument$'));
  find(glog('I', 'root.go:151', 'quiet not a whitelisted kernel argument$'));
  find(glog('I', 'run.go:16', 'Running: rpm-ostree kargs --append=nosmt$'));
  const cmdlines = lines.filter((line) => /\] Command line: /.test(line));
  t.is(cmdlines.length, 3);
  t.false(cmdlines[0]!.includes(' nosmt'));
  t.true(cmdlines[1]!.includes(' nosmt'), cmdlines[1]);
  t.false(
    cmdlines.some((line) => line.includes('devpivot.test=kargs')),
    'the refused argument is on no command line',
  );

  // Boot 1: Ignition, then systemd runs the units it wrote (the report, enabled through 20-ignition.preset, and the
  // MCS's mcd-write-pivot-reboot.service); pivot compares the booted origin, pulls, stages, reboots.
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
  find(/devpivot-report: \{"event":"booted"/, restart);
  // Boot 2 until the refused request: sshd starts on v2 (the console shows no "Started" line once the getty is up)
  // and serves logins (the ssh step).
  const requested = run.events.findIndex((e) => e.kind === 'step.start' && e.name === `pivot node1 to ${image.pinned}`);
  t.true(requested > v2Boot, 'the second request came on v2');
  const second = run.events
    .slice(0, requested)
    .flatMap((e) => (e.kind === 'vm.console' ? [e.line] : []))
    .slice(restart);
  t.true(second.some((line) => /Starting ssh\.service - OpenBSD Secure Shell server\.\.\./.test(line)));
  // The host keys came from Ignition (devpivot made and pinned them): sshd-keygen@.service's condition skipped it
  // on the first boot, so none of its "Server Key Generation" lines, and the ssh steps (StrictHostKeyChecking=yes
  // for a pinned node) logged in: the node served the pinned keys.
  t.false(
    lines.some((line) => /Server Key Generation/.test(line)),
    'no host key was made on the node',
  );
  // The Ignition-written /etc/issue is shown by the serial getty on both boots (and was merged into v2's /etc).
  t.true(lines.slice(0, restart).includes(MARKER), 'getty shows /etc/issue on boot 1');
  // (the getty may print it after the second request started: all of boot 2, up to the v3 hop's reboot)
  const third = find(/reboot: Restarting system/, restart + 1);
  t.true(lines.slice(restart, third).includes(MARKER), 'getty shows /etc/issue on boot 2');
  // Boot 2: not a first boot (the machine-id was committed and merged), Ignition does not run, the pullspec was
  // deleted before the /etc merge: pivot.service's condition fails and nothing pivots until it is asked to.
  t.false(second.some((line) => /Detected first boot|mcd-write-pivot-reboot|ignition-complete/.test(line)));
  t.false(
    second.some((line) => /pivot\[\d+\]/.test(line)),
    'pivot does not run on the new deployment by itself',
  );

  const boots = run.events.filter((e): e is Stamped<EventOf<'guest.booted'>> => e.kind === 'guest.booted');
  t.is(boots.length, 3);
  t.like(boots[0], { version: '1', commit: commitOf('1'), image: bootImage });
  t.like(boots[1], { version: '2', commit: commitOf('2'), image: target });
  t.like(boots[2], { version: '3', commit: commitOf('3') });
  for (const boot of boots) t.regex(String(boot.bootId), /^[0-9a-f-]{36}$/);
  t.is(new Set(boots.map((boot) => boot.bootId)).size, 3);
  t.deepEqual(leftoverDomains('multi-hop'), []);
});
