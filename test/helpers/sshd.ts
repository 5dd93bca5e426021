/**
 * A real OpenSSH server for tests (Debian openssh-server, installed by set-up): on 127.0.0.1 only, key-only, a host
 * key and a client key of its own in a temp directory, as the user running the tests. Fails, never skips, when sshd
 * is missing.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freeLoopbackPort } from '../../src/core/free-port.js';
import { tempDir } from './temp.js';

export const SSHD = '/usr/sbin/sshd';

export interface TestSshd {
  port: number;
  /** The private key that logs in. */
  keyfile: string;
  user: string;
  pid: number;
  /** The libvirt URI that logs in here (`keyfile` another key, for a refused login). */
  uri(keyfile?: string): string;
  /** What sshd logged so far (LogLevel VERBOSE: one "Accepted publickey for USER" per login). */
  log(): string;
  stop(): Promise<void>;
}

/** `hostKeys`: private host key texts to serve instead of one ed25519 key of its own. */
export async function startSshd(options: { allowForwarding?: boolean; hostKeys?: string[] } = {}): Promise<TestSshd> {
  if (!existsSync(SSHD)) throw new Error(`${SSHD} is missing: install Debian's openssh-server (npm run setup does)`);
  const dir = tempDir('devpivot-sshd-');
  for (const key of [...(options.hostKeys ? [] : ['host_key']), 'client_key'])
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'devpivot-test', '-f', join(dir, key)]);
  const hostKeyFiles = (options.hostKeys ?? []).map((text, i) => {
    writeFileSync(join(dir, `host_key_${i}`), text, { mode: 0o600 });
    return join(dir, `host_key_${i}`);
  });
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')));
  const port = await freeLoopbackPort();
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      ...(options.hostKeys ? hostKeyFiles.map((file) => `HostKey ${file}`) : [`HostKey ${join(dir, 'host_key')}`]),
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'StrictModes no',
      'PidFile none',
      `AllowTcpForwarding ${options.allowForwarding === false ? 'no' : 'yes'}`,
      'GatewayPorts no',
      'LogLevel VERBOSE',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); // its privilege separation directory
  const child: ChildProcess = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sshd did not start in 10 s:\n${log}`)), 10_000);
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (text: string) => {
      log += text;
      if (log.includes(`Server listening on 127.0.0.1 port ${port}`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`sshd exited with status ${code}:\n${log}`));
    });
  });
  const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
  return {
    port,
    keyfile: join(dir, 'client_key'),
    user,
    pid: child.pid!,
    uri: (keyfile = join(dir, 'client_key')) =>
      `qemu+ssh://${user}@127.0.0.1:${port}/system?keyfile=${keyfile}&no_verify=1`,
    log: () => log,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('close', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
