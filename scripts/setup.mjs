#!/usr/bin/env node
// Set-up for a fresh Debian 12 machine, run before `npm start` and `npm test`. Zero dependencies: it runs before
// node_modules exists. Idempotent; prints one line per action it takes; quiet and fast when all is in place.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROGRESS, runWithProgress } from './run-with-progress.mjs';
import {
  DEBIAN_PACKAGES,
  fedoraPackages,
  installMessage,
  missingFromDpkg,
  missingFromRpm,
  needsSystemDaemons,
  PODMAN_CONF,
  podmanConfig,
  setupUri,
  startDaemonsCommand,
  systemAccessHint,
} from './setup-plan.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const started = Date.now();

function say(message) {
  process.stdout.write(`setup: ${message}\n`);
}

function fail(message, hint) {
  process.stderr.write(`setup: error: ${message}\n${hint ? `setup: hint: ${hint}\n` : ''}`);
  process.exit(2);
}

const isRoot = process.getuid?.() === 0;
const uri = setupUri(process.env, process.getuid?.() ?? 0);

/**
 * Run a command as root (the set-up only does this when it runs as root: a normal user is told the exact sudo
 * command instead). Its progress lines (PROGRESS[tool]) are printed as they come; on failure, its last lines.
 */
async function asRoot(command, args, what, show) {
  const printable = [command, ...args].join(' ');
  const result = await runWithProgress(command, args, {
    show,
    print: (line) => say(`  ${line}`),
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (result.status !== 0)
    fail(`${what} failed (${printable}):\n${result.tail.join('\n')}`, `fix the cause above, then rerun: npm run setup`);
}

function missingPackages() {
  const result = spawnSync('dpkg-query', ['-W', `-f=\${Package} \${db:Status-Status}\n`, ...DEBIAN_PACKAGES], {
    encoding: 'utf8',
  });
  return missingFromDpkg(result.stdout ?? '');
}

/** Fedora/RHEL (untested): the packages rpm does not know, and the dnf command, never run for the user. */
function checkFedora() {
  const wanted = fedoraPackages(DEBIAN_PACKAGES);
  const result = spawnSync('rpm', ['-q', ...wanted], { encoding: 'utf8' });
  const missing = missingFromRpm(result.stdout ?? '');
  if (missing.length === 0) return;
  const { message, hint } = installMessage(missing, { distro: 'fedora', root: isRoot });
  fail(message, hint);
}

async function ensurePackages() {
  if (!existsSync('/usr/bin/dpkg-query')) {
    if (existsSync('/usr/bin/rpm')) return checkFedora();
    fail(
      'this is neither a Debian- nor an RPM-based system',
      `install the equivalents of: ${DEBIAN_PACKAGES.join(' ')}`,
    );
  }
  const missing = missingPackages();
  if (missing.length === 0) return;
  if (!isRoot) {
    // A normal user is never escalated behind their back: one message with the one command to run.
    const { message, hint } = installMessage(missing, { distro: 'debian', root: false });
    fail(message, `${hint}; then rerun: npm run setup`);
  }
  say(`installing Debian packages: ${missing.join(' ')}`);
  // Without systemd, a package's maintainer script would start its service through invoke-rc.d (openssh-server: an
  // sshd on every address). policy-rc.d answering 101 forbids that; ours lives only during the install.
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = !existsSync(policy);
  if (ownPolicy)
    writeFileSync(policy, '#!/bin/sh\n# devpivot set-up: no service starts during apt-get install\nexit 101\n', {
      mode: 0o755,
    });
  const removePolicy = () => ownPolicy && rmSync(policy, { force: true });
  process.once('exit', removePolicy); // fail() exits from inside the install
  await installPackages(missing);
  removePolicy();
}

async function installPackages(missing) {
  await asRoot('apt-get', ['update', '-q'], 'apt-get update', () => null);
  await asRoot(
    'apt-get',
    ['install', '-y', '-q', '--no-install-recommends', ...missing],
    'apt-get install',
    PROGRESS.apt,
  );
}

function pidAlive(pidFile) {
  try {
    const pid = Number.parseInt(readFileSync(pidFile, 'utf8'), 10);
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM'; // alive, and another user's (a normal user asking about root's daemons)
  }
}

/** The system daemons, only when the URI is this host's qemu:///system (the session URI spawns its own). */
async function ensureDaemons() {
  if (!needsSystemDaemons(uri)) return;
  const systemd = existsSync('/run/systemd/system');
  const running = (daemon) =>
    systemd ? spawnSync('systemctl', ['is-active', '--quiet', daemon]).status === 0 : pidAlive(`/run/${daemon}.pid`);
  const stopped = ['virtlogd', 'libvirtd'].filter((daemon) => !running(daemon));
  if (!isRoot) {
    if (stopped.length > 0)
      fail(
        `${uri} needs the system daemons, and ${stopped.join(' and ')} ${stopped.length > 1 ? 'are' : 'is'} not running`,
        `start them: ${startDaemonsCommand({ systemd, root: false })} — or use your own session daemon: LIBVIRT_DEFAULT_URI=qemu:///session`,
      );
    return checkSystemAccess();
  }
  for (const daemon of stopped) {
    say(`starting ${daemon} (${systemd ? 'systemctl' : `no systemd: ${daemon} -d`})`);
    if (systemd) await asRoot('systemctl', ['start', daemon], `starting ${daemon}`);
    else await asRoot(daemon, ['-d'], `starting ${daemon}`);
  }
  const socket = '/run/libvirt/libvirt-sock';
  const deadline = Date.now() + 15_000;
  while (!existsSync(socket)) {
    if (Date.now() > deadline)
      fail(`libvirtd started but ${socket} did not appear in 15 s`, 'look at libvirtd -v output');
    spawnSync('sleep', ['0.1']);
  }
}

/** A normal user on qemu:///system: the daemon must let them in (socket group and auth). */
function checkSystemAccess() {
  const result = spawnSync('virsh', ['-c', uri, 'version'], { encoding: 'utf8', timeout: 15_000 });
  if (result.status === 0) return;
  const why = (result.stderr || result.error?.message || `exit ${result.status}`).trim().split('\n').pop();
  const groups = spawnSync('id', ['-Gn'], { encoding: 'utf8' }).stdout?.trim().split(/\s+/) ?? [];
  fail(`${uri} refused this user: ${why}`, systemAccessHint(userInfo().username, why, groups.includes('libvirt')));
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function newestUnder(dir) {
  let newest = 0;
  if (!existsSync(dir)) return 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, mtime(join(entry.parentPath ?? entry.path, entry.name)));
  }
  return newest;
}

async function ensureNodeModules() {
  const marker = join(root, 'node_modules', '.package-lock.json');
  if (existsSync(marker) && mtime(marker) >= mtime(join(root, 'package-lock.json'))) return;
  say('installing npm dependencies (npm ci)');
  // --loglevel http: one line per request, which PROGRESS.npm turns into a count.
  const result = await runWithProgress('npm', ['ci', '--no-audit', '--no-fund', '--loglevel', 'http'], {
    cwd: root,
    show: PROGRESS.npm(),
    print: (line) => say(`  ${line}`),
  });
  if (result.status !== 0)
    fail(
      `npm ci failed:\n${result.tail.join('\n')}`,
      'check network access to the npm registry, then rerun: npm run setup',
    );
}

function ensureBuilt() {
  const built = mtime(join(root, 'dist', '.tsbuildinfo'));
  const sources = Math.max(
    ...['src', 'test', 'bench'].map((dir) => newestUnder(join(root, dir))),
    mtime(join(root, 'tsconfig.json')),
    mtime(join(root, 'package-lock.json')),
  );
  if (built >= sources) return;
  say('building TypeScript (tsc)');
  const result = spawnSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', join(root, 'tsconfig.json')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) fail('TypeScript build failed', 'fix the errors above, then rerun: npm run setup');
}

function ensureFixtureImages() {
  const entry = join(root, 'dist', 'src', 'cli', 'commands', 'images.js');
  if (!existsSync(entry)) return; // the images command lands with the fixture OS
  const result = spawnSync(process.execPath, [join(root, 'bin', 'devpivot.js'), 'images', 'build'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) fail('building the fixture images failed', 'see the output above; rerun: npm run setup');
}

/** podman without systemd (root and rootless read the same drop-in): written once, as root. */
function ensurePodman() {
  const text = podmanConfig({ systemd: existsSync('/run/systemd/system') });
  if (!text || !isRoot) return;
  try {
    if (readFileSync(PODMAN_CONF, 'utf8') === text) return;
  } catch {
    // not written yet
  }
  say(`configuring podman for a host without systemd (${PODMAN_CONF})`);
  mkdirSync(dirname(PODMAN_CONF), { recursive: true });
  writeFileSync(PODMAN_CONF, text);
}

/**
 * libvirt runs swtpm_setup as tss (qemu.conf swtpm_user), which signs each new TPM's EK in swtpm-localca's
 * directory; files there that another user made (swtpm_setup run by hand as root) refuse it ("Need read/write
 * rights on /var/lib/swtpm-localca/.lock.swtpm-localca for user tss") and every `tpm: true` node fails to start.
 * The package makes the directory tss's (swtpm-tools.postinst); put what is in it back to that owner.
 */
function ensureSwtpmLocalCa() {
  const dir = '/var/lib/swtpm-localca';
  if (!isRoot || !existsSync(dir)) return;
  const tss = spawnSync('id', ['-u', 'tss'], { encoding: 'utf8' });
  const uid = Number.parseInt(tss.stdout, 10);
  if (tss.status !== 0 || Number.isNaN(uid)) return;
  const foreign = readdirSync(dir).filter((name) => statSync(join(dir, name)).uid !== uid);
  if (foreign.length === 0) return;
  say(`giving ${dir} back to tss (${foreign.join(', ')} had another owner; libvirt's swtpm_setup runs as tss)`);
  const result = spawnSync('chown', ['-R', 'tss:root', dir], { stdio: 'inherit' });
  if (result.status !== 0) fail(`chown -R tss:root ${dir} failed`, `run it by hand as root`);
}

await ensurePackages();
ensurePodman();
ensureSwtpmLocalCa();
await ensureDaemons();
await ensureNodeModules();
ensureBuilt();
ensureFixtureImages();
const ms = Date.now() - started;
if (ms > 3000) say(`done in ${(ms / 1000).toFixed(1)} s`);
