/**
 * devpivot as a normal user, end to end (issue 16): an unprivileged user in the libvirt group (created by the test
 * set-up) runs the set-up `npm start`/`npm test` run — which builds the fixture OS without root, in a user
 * namespace, into the user's own cache — then `devpivot run scenarios/old-to-new.yaml --connect qemu:///session`:
 * the user's own libvirt daemon, user-mode networking, the user's pool. The rootless build must equal the root
 * build of the same key (commits and every byte of disk.qcow2), the node must pivot 1 → 2 from it, nothing in the
 * user's HOME may belong to root, and root's `devpivot ps` must not list the user's VM while the user's does.
 * Cost: one fixture build (~2–5 min on the shared 2-core host) and one pivot (~4 min).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  createReadStream,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import test from 'ava';
import { loadFixture } from '../../src/fixture/fixture.js';
import { readManifest } from '../../src/fixture/fixture-store.js';
import { binPath } from '../helpers/cli.js';
import { ensureTestUser, privateHome, readableCheckout, runAsUser, USER_PATH } from '../helpers/unprivileged-user.js';
import { bootedVersions, runScenarioCli, session } from './run-scenario.js';

async function sha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Every path under `dir` whose owner is not `uid`. */
function foreignOwned(dir: string, uid: number): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const info = lstatSync(path);
    if (info.uid !== uid) found.push(`${path} (uid ${info.uid})`);
    if (info.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return found;
}

interface PsRow {
  name: string;
  session: string;
}

function psRows(stdout: string): PsRow[] {
  return JSON.parse(stdout) as PsRow[];
}

test.serial('a normal user builds the fixture without root and pivots it 1 → 2 under qemu:///session', async (t) => {
  t.timeout(1_500_000);
  const user = ensureTestUser();
  const { home, remove: removeHome } = privateHome(user);
  const checkout = readableCheckout(user);
  const cache = join(home, '.cache', 'devpivot');
  const env = { HOME: home, PATH: USER_PATH, LANG: 'C.UTF-8', DEVPIVOT_CACHE_DIR: cache };
  const id = session('rootless');
  t.teardown(() => {
    runAsUser(user, env, process.execPath, [`${checkout.repo}bin/devpivot.js`, 'down', '--session', id], {
      timeoutMs: 120_000,
    });
    removeHome();
    checkout.remove();
  });
  t.log(
    `user ${user.name} (uid ${user.uid}), HOME ${home}, checkout ${checkout.repo}${checkout.copied ? ' (a copy)' : ''}`,
  );

  // The three .debs the recipe downloads come from root's cache: the build reaches no network from here.
  const root = await loadFixture();
  runAsUser(user, env, 'mkdir', ['-p', join(cache, 'fixture')]);
  cpSync(join(dirname(root.dir), '.debs'), join(cache, 'fixture', '.debs'), { recursive: true });
  execFileSync('chown', ['-R', `${user.uid}:${user.gid}`, join(cache, 'fixture', '.debs')]);

  // The set-up `npm start` and `npm test` run first: as this user, with every package present, it needs no root.
  const started = Date.now();
  const setup = runAsUser(user, env, process.execPath, [`${checkout.repo}scripts/setup.mjs`], {
    cwd: checkout.repo,
    timeoutMs: 900_000,
  });
  const rootlessSeconds = (Date.now() - started) / 1000;
  t.is(setup.status, 0, `${setup.stdout}\n${setup.stderr}`);
  t.log(`set-up as ${user.name}: ${rootlessSeconds.toFixed(0)} s (the fixture build without root included)`);
  // (the build's own log names sudo's .deb: only a command to run counts)
  t.false(
    /sudo (apt-get|dnf|systemctl|virtlogd|libvirtd|devpivot)/.test(setup.stdout + setup.stderr),
    'no sudo asked for',
  );
  t.regex(setup.stdout + setup.stderr, /fixture-build: in a user namespace \(uid_map: 0 \d+ 1\)/);

  // Same key, same bytes as root's build.
  const [key] = readdirSync(join(cache, 'fixture')).filter((name) => !name.startsWith('.'));
  const rootless = await readManifest(join(cache, 'fixture', key ?? 'none'));
  t.log(`fixture build: ${rootlessSeconds.toFixed(0)} s without root (set-up), root's ${root.buildSeconds} s`);
  t.is(rootless.key, root.key);
  t.deepEqual(
    rootless.versions.map((entry) => [entry.version, entry.commit]),
    root.versions.map((entry) => [entry.version, entry.commit]),
  );
  t.is(await sha256(rootless.disk), await sha256(root.disk));

  // The run, as the user, from the user's own build; ps from both sides while its VM is up.
  let seen: { user: PsRow[]; root: PsRow[] } | undefined;
  const psErrors: string[] = [];
  const run = await runScenarioCli('rootless', {
    file: `${checkout.repo}scenarios/old-to-new.yaml`,
    extraArgs: ['--connect', 'qemu:///session'],
    runAs: { user: user.name, env, repo: checkout.repo },
    timeoutMs: 900_000,
    onEvent: (event) => {
      // At the first boot's report: the pull, the stage and the reboot are still ahead, so the VM is up for tens of
      // seconds. (At the v2 report the run ends within a second and removes the VM; a ps started from this
      // callback in a loaded run found it gone.)
      if (seen || event.kind !== 'guest.booted' || event.version !== '1') return;
      // The user's ps, asked again if it fails; what it said is kept for the assertion's message.
      let mine = runAsUser(user, env, process.execPath, [`${checkout.repo}bin/devpivot.js`, 'ps', '--json']);
      for (let attempt = 1; attempt < 3 && mine.status !== 0; attempt++) {
        psErrors.push(`exit ${mine.status}: ${mine.stderr}`);
        execFileSync('sleep', ['2']);
        mine = runAsUser(user, env, process.execPath, [`${checkout.repo}bin/devpivot.js`, 'ps', '--json']);
      }
      if (mine.status !== 0) psErrors.push(`exit ${mine.status}: ${mine.stderr}`);
      const roots = execFileSync(process.execPath, [binPath, 'ps', '--json', '--connect', 'qemu:///system'], {
        encoding: 'utf8',
        env: { ...process.env, LIBVIRT_DEFAULT_URI: '' },
      });
      seen = { user: mine.status === 0 ? psRows(mine.stdout) : [], root: psRows(roots) };
    },
  });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.deepEqual(run.steps, [
    '✓ prepare',
    '✓ up',
    '✓ expect node1 ignition within 3m',
    '✓ expect node1 pivot.pulling within 3m',
    '✓ expect node1 pivot.staged within 5m',
    '✓ expect node1 booted fixture:2 within 5m',
    '✓ assert node1 booted fixture:2 reboots=1',
  ]);
  t.deepEqual(bootedVersions(run.events), ['1', '2']);

  // Isolation: the user's ps shows its VM (and only its own sessions), root's ps on qemu:///system does not.
  t.truthy(seen, 'ps ran while the node was up');
  t.deepEqual(
    seen?.user.map((row) => row.name),
    [`devpivot-${id}-node1`],
    psErrors.join('\n'),
  );
  t.false(seen?.root.some((row) => row.session === id) ?? true, JSON.stringify(seen?.root));

  // Everything the user's run made in its HOME (cache, state, libvirt's session files, the pool) is its own.
  t.true(existsSync(join(home, '.local', 'share', 'libvirt', 'images', 'devpivot')), "the user's own pool");
  t.true(existsSync(join(home, '.local', 'state', 'devpivot', 'sessions', id, 'session.json')));
  t.deepEqual(foreignOwned(home, user.uid), []);
  const logs = runAsUser(user, env, process.execPath, [`${checkout.repo}bin/devpivot.js`, 'logs', 'node1']);
  t.is(logs.status, 0, logs.stderr);
  t.regex(logs.stdout, /pivot/);
  // …and root's logs do not see the user's session (root's state directory is its own).
  const rootLogs = spawnSync(process.execPath, [binPath, 'logs', 'node1', '--session', id], { encoding: 'utf8' });
  t.not(rootLogs.status, 0);
  t.regex(rootLogs.stderr, /no console log for node node1 in session/);
});

test.serial('a normal user missing a package is told the one sudo command, and nothing is installed', (t) => {
  const user = ensureTestUser();
  const { home, remove } = privateHome(user);
  t.teardown(remove);
  const checkout = readableCheckout(user);
  t.teardown(checkout.remove);
  // dpkg-query as it answers when ovmf and jq are not installed (the real one, with those two reported missing).
  const bin = mkdtempSync(join(tmpdir(), 'devpivot-rootless-bin-'));
  t.teardown(() => rmSync(bin, { recursive: true, force: true }));
  chmodSync(bin, 0o755);
  writeFileSync(
    join(bin, 'dpkg-query'),
    '#!/bin/sh\n/usr/bin/dpkg-query "$@" | sed -e "s/^ovmf installed$/ovmf not-installed/" -e "/^jq /d"\n',
    { mode: 0o755 },
  );
  const setup = runAsUser(user, { HOME: home, PATH: `${bin}:${USER_PATH}` }, process.execPath, [
    `${checkout.repo}scripts/setup.mjs`,
  ]);
  t.is(setup.status, 2, setup.stdout + setup.stderr);
  t.is(setup.stdout, '', 'nothing ran before the message');
  t.regex(setup.stderr, /^setup: error: missing Debian packages: ovmf jq\n/);
  t.true(
    setup.stderr.includes('sudo apt-get update && sudo apt-get install -y --no-install-recommends ovmf jq'),
    setup.stderr,
  );
  t.true(setup.stderr.includes('untested: sudo dnf install -y edk2-ovmf jq'), setup.stderr);
});
