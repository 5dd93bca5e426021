/** greenboot's console lines as guest.health / guest.fallback events (engine/greenboot.ts through the classifier). */
import test from 'ava';
import { type ClassifierInput, classify, type GuestEvent, initialState } from '../../src/engine/classifier.js';
import { realDeps } from '../../src/engine/real-deps.js';

function run(lines: Array<string | ClassifierInput>): GuestEvent[] {
  let state = initialState;
  const events: GuestEvent[] = [];
  for (const line of lines) {
    const out = classify(state, typeof line === 'string' ? { kind: 'vm.console', node: 'n1', line } : line);
    state = out.state;
    events.push(...out.events);
  }
  return events;
}

const reboot: ClassifierInput = { kind: 'vm.reboot', node: 'n1', domain: 'd' };
const brief = (events: GuestEvent[]) =>
  events.map((e) =>
    e.kind === 'guest.health'
      ? `health ${e.ok}${e.check ? ` ${e.check}` : ''}`
      : e.kind === 'guest.fallback'
        ? `fallback ${e.tool}`
        : e.kind,
  );

// A red boot as journald forwards greenboot's units to the console (priority prefixes stripped, NAME[PID]: added),
// with systemd's own status lines and the kernel's timestamps.
const RED_BOOT = [
  '[   31.104522] greenboot[402]: Running Required Health Check Scripts...',
  "[   31.301876] greenboot[402]: Script '00_required_scripts_start.sh' SUCCESS",
  "[   31.420011] greenboot[402]: Script '10_failing_check.sh' FAILURE (exit code '1'). Continuing...",
  '[FAILED] Failed to start greenboot-healthcheck.service - greenboot Health Checks Runner.',
  '[   31.902310] greenboot[455]: Boot Status is RED - Health Check FAILURE!',
  '[   32.011999] redboot-auto-reboot[457]: SYSTEM is UNHEALTHY. Rebooting...',
];

test('a red boot: one health failure naming the required check, and no guest.failure for the failed unit', (t) => {
  t.deepEqual(brief(run(RED_BOOT)), ['health false 10_failing_check.sh']);
});

test('each boot has its own verdict; the fallback boot reports the rollback, then green', (t) => {
  const events = run([
    ...RED_BOOT,
    reboot,
    ...RED_BOOT,
    reboot,
    ' Not on a bootc managed host, trying rpm-ostree rollback next.',
    "greenboot-rpm-ostree-grub2-check-fallback[380]: Moving '0123.0' to be first deployment",
    'greenboot-rpm-ostree-grub2-check-fallback[380]: Changes queued for next boot. Run "systemctl reboot" to start a reboot',
    'greenboot-rpm-ostree-grub2-check-fallback[380]: FALLBACK BOOT DETECTED! Default rpm-ostree deployment has been rolled back.',
    'greenboot[402]: Running Required Health Check Scripts...',
    'greenboot[402]: Running Wanted Health Check Scripts...',
    'greenboot[470]: Boot Status is GREEN - Health Check SUCCESS',
  ]);
  t.deepEqual(brief(events), [
    'health false 10_failing_check.sh',
    'health false 10_failing_check.sh',
    'fallback rpm-ostree',
    'health true',
  ]);
  t.like(events.at(-2), { kind: 'guest.fallback', node: 'n1', tool: 'rpm-ostree' });
});

test('a failed wanted check is only logged (greenboot goes on): no health failure', (t) => {
  t.deepEqual(
    brief(
      run([
        'greenboot[402]: Running Required Health Check Scripts...',
        "greenboot[402]: Script '00_required_scripts_start.sh' SUCCESS",
        'greenboot[402]: Running Wanted Health Check Scripts...',
        "greenboot[402]: Script '50_optional.sh' FAILURE (exit code '2'). Continuing...",
        'greenboot[470]: Boot Status is GREEN - Health Check SUCCESS',
      ]),
    ),
    ['health true'],
  );
});

test("a red boot whose check the console lost is still a failed health check, unnamed; bootc's fallback is named", (t) => {
  const events = run([
    'greenboot[455]: Boot Status is RED - Health Check FAILURE!',
    reboot,
    'greenboot-rpm-ostree-grub2-check-fallback[380]: FALLBACK BOOT DETECTED! Default bootc deployment has been rolled back.',
  ]);
  t.deepEqual(brief(events), ['health false', 'fallback bootc']);
});

test("systemd's failed-start line, as the console shows it (the unit name ellipsized, or the description alone), is the red boot", (t) => {
  for (const line of [
    '[FAILED] Failed to start greenboot-… - greenboot Health Checks Runner.',
    '[FAILED] Failed to start greenboot-healthcheck.service - greenboot Health Checks Runner.',
    '[FAILED] Failed to start greenboot Health Checks Runner.',
  ])
    t.deepEqual(brief(run([line])), ['health false'], line);
  // seen on the VM: the check's own line first, then systemd's: one verdict, no failure
  t.deepEqual(
    brief(
      run([
        "greenboot[245]: Script '10_failing_check.sh' FAILURE (exit code '1'). Continuing...",
        '[FAILED] Failed to start greenboot-… - greenboot Health Checks Runner.',
      ]),
    ),
    ['health false 10_failing_check.sh'],
  );
});

test('any other failed unit is still a failure, and so is an error of the fallback rollback', (t) => {
  t.deepEqual(brief(run(['[FAILED] Failed to start pivot.service - Pivot Tool.'])), ['guest.failure']);
  t.deepEqual(
    brief(
      run([
        'greenboot-rpm-ostree-grub2-check-fallback[380]: error: No rollback deployment found',
        '[FAILED] Failed to start greenboot-rpm-ostree-grub2-check-fallback.service - Check for fallback boot.',
      ]),
    ),
    ['guest.failure'],
  );
});

test("the fallback's rollback queues changes: not a pivot staging (no guest.pivot)", (t) => {
  t.deepEqual(
    brief(
      run([
        'Changes queued for next boot. Run "systemctl reboot" to start a reboot',
        reboot,
        'greenboot-rpm-ostree-grub2-check-fallback[380]: Changes queued for next boot. Run "systemctl reboot" to start a reboot',
      ]),
    ),
    ['guest.pivot'],
  );
});

test("a node's health-check reaches its Ignition through the real deps: greenboot's units enabled, on the console, its check written", (t) => {
  const config = realDeps({ stateDir: '/nonexistent' }).generateIgnition({
    driver: 'rpm-ostree',
    image: `10.0.2.2:5000/devpivot/v2@sha256:${'a'.repeat(64)}`,
    registry: { hostPort: '10.0.2.2:5000', insecure: true },
    healthCheck: { attempts: 2, script: { name: '20_ok.sh', contents: '#!/bin/bash\nexit 0\n' } },
  }) as {
    storage: { files: Array<{ path: string; mode: number }> };
    systemd: { units: Array<{ name: string; enabled?: boolean; dropins?: Array<{ contents: string }> }> };
  };
  const unit = (name: string) => config.systemd.units.find((u) => u.name === name);
  t.like(unit('greenboot-healthcheck.service'), { enabled: true });
  t.regex(unit('greenboot-healthcheck.service')?.dropins?.[0]?.contents ?? '', /StandardOutput=journal\+console/);
  t.like(unit('greenboot-grub2-set-counter.service'), { enabled: true });
  t.like(unit('greenboot-rpm-ostree-grub2-check-fallback.service'), { enabled: true });
  t.like(unit('redboot-auto-reboot.service'), { enabled: true });
  const paths = config.storage.files.map((file) => [file.path, file.mode]);
  t.deepEqual(
    paths.filter(([path]) => String(path).startsWith('/etc/greenboot/')),
    [
      ['/etc/greenboot/greenboot.conf', 0o644],
      ['/etc/greenboot/check/required.d/20_ok.sh', 0o755],
    ],
  );
});
