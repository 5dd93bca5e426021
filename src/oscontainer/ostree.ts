/**
 * The ostree side of an oscontainer, through the ostree CLI: resolve a commit, read its version, export exactly
 * that commit into a fresh archive-mode repository with no refs, or commit a directory tree.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevpivotError } from '../core/errors.js';
import { run } from '../core/exec.js';

/**
 * Exporting or committing a large tree takes minutes; a deadline only stops an ostree that hangs. `signal` (the
 * build's) ends a running ostree at once, so that Ctrl-C neither waits for it nor leaves it running.
 */
const OSTREE_TIMEOUT_MS = 60 * 60 * 1000;

function runOstree(args: string[], signal: AbortSignal | undefined) {
  return run('ostree', args, { timeoutMs: OSTREE_TIMEOUT_MS, signal });
}

async function ostree(args: string[], what: string, signal?: AbortSignal): Promise<string> {
  const result = await runOstree(args, signal);
  signal?.throwIfAborted();
  if (result.code !== 0) {
    const why = result.timedOut ? `no answer after ${OSTREE_TIMEOUT_MS / 60_000} minutes` : result.spawnError?.message;
    const detail = (result.stderr || result.stdout || why || '').trim();
    throw new DevpivotError('OSTREE_FAILED', `${what} failed: ${detail}`, {
      hint: result.spawnError?.code === 'ENOENT' ? 'install ostree (Debian: apt-get install ostree)' : undefined,
    });
  }
  return result.stdout.trim();
}

/** `'1.2'` (GVariant text) → `1.2`. */
function parseGVariantString(text: string): string {
  const match = /^'(.*)'$/s.exec(text.trim()) ?? /^"(.*)"$/s.exec(text.trim());
  return match ? match[1]!.replace(/\\(.)/g, '$1') : text.trim();
}

export interface CommitInfo {
  commit: string;
  version: string | null;
}

/** Resolve a ref or checksum in `repo` to the full checksum and its `version` metadata. */
export async function resolveCommit(repo: string, commitOrRef: string, signal?: AbortSignal): Promise<CommitInfo> {
  const commit = await ostree(
    ['rev-parse', `--repo=${repo}`, commitOrRef],
    `resolving '${commitOrRef}' in ${repo}`,
    signal,
  ).catch((error: DevpivotError) => {
    signal?.throwIfAborted();
    throw new DevpivotError('OSTREE_COMMIT_NOT_FOUND', `no commit or ref '${commitOrRef}' in ostree repo ${repo}`, {
      hint: `list refs with 'ostree refs --repo=${repo}'; ${error.message}`,
      cause: error,
    });
  });
  const version = await runOstree(['show', `--repo=${repo}`, '--print-metadata-key=version', commit], signal);
  signal?.throwIfAborted();
  return { commit, version: version.code === 0 ? parseGVariantString(version.stdout) : null };
}

/**
 * Export `commit` from `sourceRepo` into `destination` (created), an archive-mode repo holding exactly that commit
 * (no parents: `--depth=0`) and no refs: pulling by checksum writes none, and we check.
 */
export async function exportCommit(
  sourceRepo: string,
  commit: string,
  destination: string,
  signal?: AbortSignal,
): Promise<void> {
  await ostree(['init', '--mode=archive', `--repo=${destination}`], `creating repo ${destination}`, signal);
  await ostree(
    ['pull-local', `--repo=${destination}`, '--depth=0', sourceRepo, commit],
    `exporting commit ${commit}`,
    signal,
  );
  const refs = await ostree(['refs', `--repo=${destination}`], 'listing refs', signal);
  if (refs !== '')
    throw new DevpivotError('OSTREE_FAILED', `exported repo ${destination} unexpectedly has refs: ${refs}`);
  // Ostree may leave a transaction or partial-commit marker behind on failure; a clean export has neither.
  const state = await readdir(join(destination, 'state')).catch(() => []);
  if (state.length > 0)
    throw new DevpivotError('OSTREE_FAILED', `exported commit ${commit} is partial (${state.join(', ')})`);
}

/** Commit a directory tree into a new archive repo (for `build --from-dir`); returns the repo and commit. */
export async function commitDirectory(
  tree: string,
  options: { version: string; subject?: string; workDir?: string; signal?: AbortSignal },
): Promise<{ repo: string; commit: string }> {
  const repo = await mkdtemp(join(options.workDir ?? tmpdir(), 'devpivot-commit-'));
  try {
    await ostree(['init', '--mode=archive', `--repo=${repo}`], `creating repo ${repo}`, options.signal);
    const commit = await ostree(
      [
        'commit',
        `--repo=${repo}`,
        `--tree=dir=${tree}`,
        `--add-metadata-string=version=${options.version}`,
        `--subject=${options.subject ?? `devpivot ${options.version}`}`,
        // A fixed timestamp and owner keep the commit (and so the image digest) reproducible.
        '--timestamp=1970-01-01T00:00:00Z',
        '--owner-uid=0',
        '--owner-gid=0',
        '--orphan',
      ],
      `committing ${tree}`,
      options.signal,
    );
    return { repo, commit };
  } catch (error) {
    await rm(repo, { recursive: true, force: true });
    throw error;
  }
}
