/**
 * Test helper: an ostree commit with every case the native format treats specially, made with the real ostree
 * CLI from a real tree (as root: ownership and security.* xattrs need it). Two paths with one content, symlinks
 * (relative, absolute, a target longer than a tar header field), empty files, `/usr/etc`, an empty `/sysroot`,
 * `/var` without `tmp`, binary xattrs (user.*, security.capability, security.selinux), setuid, a non-root owner,
 * a 0700 directory with an xattr, a path longer than 100 bytes, a non-ASCII name, and large files (random and
 * compressible) whose deflate streams are joined.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface OsTree {
  dir: string;
  tree: string;
  repo: string;
  commit: string;
  /** Commit subject and timestamp, as given to ostree. */
  subject: string;
  timestamp: string;
}

export const LONG_DIR = `usr/share/${'d'.repeat(60)}/${'e'.repeat(60)}`;
export const LONG_TARGET = `../../${'t'.repeat(120)}`;
/** user.devpivot's value: not valid UTF-8, with a nul inside. */
export const USER_XATTR = Buffer.from([0x76, 0x00, 0xff, 0xfe]);
/** A file capability (VFS_CAP_REVISION_2, cap_net_bind_service permitted). */
export const CAPABILITY = Buffer.from('0000000200040000000000000000000000000000', 'hex');

function setXattrs(path: string, xattrs: Record<string, Buffer>): void {
  const script =
    'import os, sys\nfor i in range(2, len(sys.argv), 2): os.setxattr(sys.argv[1], sys.argv[i], bytes.fromhex(sys.argv[i+1]))';
  const args = Object.entries(xattrs).flatMap(([name, value]) => [name, value.toString('hex')]);
  execFileSync('python3', ['-c', script, path, ...args]);
}

export async function makeOsTree(options: { largeKiB?: number } = {}): Promise<OsTree> {
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-test-native-'));
  const tree = join(dir, 'tree');
  const file = async (path: string, content: string | Buffer, mode = 0o644) => {
    await mkdir(dirname(join(tree, path)), { recursive: true });
    await writeFile(join(tree, path), content);
    await chmod(join(tree, path), mode);
  };
  await file('usr/bin/hello', '#!/bin/sh\necho hello\n', 0o755);
  await file('usr/libexec/hello-again', '#!/bin/sh\necho hello\n', 0o755); // same object as usr/bin/hello
  await file('usr/bin/suid', 'setuid helper\n', 0o4755);
  await file('usr/etc/os-release', 'NAME=devpivot-native\nVERSION_ID=3\n');
  await file('usr/etc/empty.conf', '');
  await file('usr/share/empty', '');
  await file('usr/share/owned', 'owned by 1000\n', 0o640);
  await chown(join(tree, 'usr/share/owned'), 1000, 1000);
  await file('usr/share/caps', 'a file with xattrs\n', 0o755);
  setXattrs(join(tree, 'usr/share/caps'), {
    'user.devpivot': USER_XATTR,
    'security.capability': CAPABILITY,
    'security.selinux': Buffer.from('system_u:object_r:bin_t:s0\0'),
  });
  await file(`${LONG_DIR}/long-name.txt`, 'deep\n');
  await file('usr/share/ünïcødé', 'unicode name\n');
  await file('usr/lib/big.bin', randomBytes((options.largeKiB ?? 1536) * 1024));
  // Compressible and over 64 KiB: its deflate stream from the repo is joined into the layer as it is.
  await file('usr/share/doc/words.txt', Array.from({ length: 40_000 }, (_, i) => `line ${i} ${i % 97}`).join('\n'));
  await mkdir(join(tree, 'usr/lib/private'), { recursive: true });
  await chmod(join(tree, 'usr/lib/private'), 0o700);
  setXattrs(join(tree, 'usr/lib/private'), { 'user.dir': Buffer.from('directory xattr') });
  await file('usr/lib/private/secret', 'secret\n', 0o600);
  await symlink('hello', join(tree, 'usr/bin/sh'));
  await symlink('/usr/bin/hello', join(tree, 'usr/bin/abs'));
  await symlink(LONG_TARGET, join(tree, 'usr/lib/long-link'));
  await symlink('usr/bin', join(tree, 'bin'));
  for (const empty of ['sysroot', 'var', 'boot', 'proc']) await mkdir(join(tree, empty));

  const repo = join(dir, 'repo');
  const ostree = (...args: string[]) => execFileSync('ostree', args, { encoding: 'utf8' }).trim();
  ostree('init', '--mode=archive', `--repo=${repo}`);
  const subject = 'devpivot native test 3.0';
  const timestamp = '2025-06-01T12:34:56Z';
  const commit = ostree(
    'commit',
    `--repo=${repo}`,
    '--branch=testos/native',
    `--tree=dir=${tree}`,
    '--add-metadata-string=version=3.0',
    "--add-metadata=ostree.linux='6.1.0-test'",
    "--add-metadata=ostree.container-cmd=['/usr/bin/hello', '--greet']",
    `--subject=${subject}`,
    `--timestamp=${timestamp}`,
  );
  return { dir, tree, repo, commit, subject, timestamp };
}

/** `ostree ls -R -X -C` of a commit: type, mode, owner, size, checksum, xattrs and path of every entry. */
export function lsCommit(repo: string, commit: string): string {
  return execFileSync('ostree', ['ls', '-R', '-X', '-C', `--repo=${repo}`, commit], { encoding: 'utf8' });
}
