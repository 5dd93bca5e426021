#!/usr/bin/env node
// Set-up for a fresh Debian 12 machine, run before `npm start` and `npm test`. Zero dependencies: it runs before
// node_modules exists. Idempotent; prints one line per action it takes; quiet and fast when all is in place.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROGRESS, runWithProgress } from './run-with-progress.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const started = Date.now();

// Debian packages: the VM stack, the image tools, and docker-registry (distribution 2.8) as the reference peer
// for registry tests and benchmarks and the upstream of the pull-through tests; python3 (tomllib, 3.11+) parses
// the mirror drop-in in its unit test.
const PACKAGES = [
  'qemu-system-x86',
  'qemu-utils',
  'libvirt-daemon-system',
  'libvirt-clients',
  'skopeo',
  'ostree',
  'ignition',
  'busybox-static',
  'linux-image-amd64',
  'grub-pc-bin',
  'grub-efi-amd64-bin',
  'grub-common',
  'mtools',
  'dosfstools',
  'systemd',
  'systemd-sysv', // the fixture's /sbin/init (copied from the host's package)
  'udev',
  'passwd',
  'openssh-client',
  'openssh-server', // the sshd on 127.0.0.1 the remote-host tests log in to (started by them, never as a service)
  'fdisk',
  'e2fsprogs',
  'cpio',
  'ovmf',
  'jq',
  'curl',
  'docker-registry',
  'python3',
];

function say(message) {
  process.stdout.write(`setup: ${message}\n`);
}

function fail(message, hint) {
  process.stderr.write(`setup: error: ${message}\n${hint ? `setup: hint: ${hint}\n` : ''}`);
  process.exit(2);
}

const isRoot = process.getuid?.() === 0;
const hasSudo = !isRoot && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;

/**
 * Run a command that needs root: directly as root, through passwordless sudo, or fail naming the command. Its
 * progress lines (PROGRESS[tool]) are printed as they come; on failure, its last lines.
 */
async function asRoot(command, args, what, show) {
  const printable = [command, ...args].join(' ');
  if (!isRoot && !hasSudo)
    fail(`${what} needs root, and this user is not root and has no passwordless sudo`, `run as root: ${printable}`);
  const [file, argv] = isRoot ? [command, args] : ['sudo', ['-n', command, ...args]];
  const result = await runWithProgress(file, argv, {
    show,
    print: (line) => say(`  ${line}`),
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  if (result.status !== 0)
    fail(`${what} failed (${printable}):\n${result.tail.join('\n')}`, `fix the cause above, then rerun: npm run setup`);
}

function missingPackages() {
  const result = spawnSync('dpkg-query', ['-W', `-f=\${Package} \${db:Status-Status}\n`, ...PACKAGES], {
    encoding: 'utf8',
  });
  const installed = new Set(
    (result.stdout ?? '')
      .split('\n')
      .filter((line) => line.endsWith(' installed'))
      .map((line) => line.split(' ')[0]),
  );
  return PACKAGES.filter((name) => !installed.has(name));
}

async function ensurePackages() {
  if (!existsSync('/usr/bin/dpkg-query')) {
    fail('this is not a Debian-based system (no dpkg-query)', `install the equivalents of: ${PACKAGES.join(' ')}`);
  }
  const missing = missingPackages();
  if (missing.length === 0) return;
  say(`installing Debian packages: ${missing.join(' ')}`);
  // Without systemd, a package's maintainer script would start its service through invoke-rc.d (openssh-server: an
  // sshd on every address). policy-rc.d answering 101 forbids that; ours lives only during the install.
  const policy = '/usr/sbin/policy-rc.d';
  const ownPolicy = isRoot && !existsSync(policy);
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
  } catch {
    return false;
  }
}

function ensureDaemons() {
  if (!isRoot) return; // qemu:///session needs no system daemon; libvirt spawns a per-user one
  const systemd = existsSync('/run/systemd/system');
  for (const daemon of ['virtlogd', 'libvirtd']) {
    if (systemd) {
      if (spawnSync('systemctl', ['is-active', '--quiet', daemon]).status === 0) continue;
      say(`starting ${daemon} (systemctl)`);
      asRoot('systemctl', ['start', daemon], `starting ${daemon}`);
    } else {
      if (pidAlive(`/run/${daemon}.pid`)) continue;
      say(`starting ${daemon} (no systemd: ${daemon} -d)`);
      asRoot(daemon, ['-d'], `starting ${daemon}`);
    }
  }
  const socket = '/run/libvirt/libvirt-sock';
  const deadline = Date.now() + 15_000;
  while (!existsSync(socket)) {
    if (Date.now() > deadline)
      fail(`libvirtd started but ${socket} did not appear in 15 s`, 'look at libvirtd -v output');
    spawnSync('sleep', ['0.1']);
  }
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

await ensurePackages();
ensureDaemons();
await ensureNodeModules();
ensureBuilt();
ensureFixtureImages();
const ms = Date.now() - started;
if (ms > 3000) say(`done in ${(ms / 1000).toFixed(1)} s`);
