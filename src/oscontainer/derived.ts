/**
 * A derived image, as a bootc or FCOS developer builds one: a Containerfile `ARG BASE` / `FROM $BASE` plus their own
 * steps, built by real podman on this host with `--build-arg BASE=<the base, pinned by digest>`, then pushed with
 * podman to a registry (podman reuses the base's compressed blobs there, so the ostree layers keep their digests).
 * `--isolation chroot`: RUN steps need no OCI runtime, hence no cgroups (crun refuses the hybrid cgroup layout of a
 * host without systemd) and no network namespace; the base comes from a plain-HTTP loopback registry, hence
 * `--tls-verify=false`. The image's labels are read back from the registry (api.ts `describeImage`).
 * Each build has a podman store of its own (`--root`/`--runroot` in a private temporary directory, the vfs driver:
 * nothing mounted is left behind), removed with it: the user's containers-storage is never touched, and two
 * builds of one base never share images (a reproducible base has one image ID, so one build's cleanup removed
 * the image another was building on: "image not known").
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventBus } from '../core/bus.js';
import { DevpivotError } from '../core/errors.js';
import { startProcess } from '../core/exec.js';

export interface DerivedBuild {
  /** The Containerfile (`ARG BASE`, `FROM $BASE`). */
  containerfile: string;
  /** The build context directory. */
  context: string;
  /** The base image as podman pulls it: `host:port/repo@sha256:…`. */
  base: string;
  /** Where to push: `host:port/repo:tag`. */
  target: string;
  bus?: EventBus;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
}

async function podman(args: string[], what: string, options: DerivedBuild): Promise<void> {
  const tail: string[] = [];
  const child = startProcess('podman', args, {
    ...(options.env ? { env: options.env } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    onLine: (line) => {
      tail.push(line);
      if (tail.length > 20) tail.shift();
      options.bus?.emit({ kind: 'log', level: 'info', source: 'podman', message: line });
    },
  });
  const exit = await child.exited;
  options.signal?.throwIfAborted();
  if (exit.spawnError)
    throw new DevpivotError('TOOL_MISSING', `podman cannot run (${exit.spawnError.message})`, {
      hint: 'install podman (npm run setup)',
    });
  if (exit.code !== 0)
    throw new DevpivotError('DERIVED_BUILD_FAILED', `${what} failed: ${tail.filter(Boolean).slice(-3).join(' / ')}`, {
      hint: `run it by hand to see all of it: podman ${args.join(' ')}`,
    });
}

/** Build the derived image and push it; the manifest digest in the registry. The local tag is removed. */
export async function buildDerived(options: DerivedBuild): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), 'devpivot-derived-'));
  const tag = `localhost/devpivot-derived/${process.pid}-${Date.now()}:build`;
  const store = ['--root', join(work, 'storage'), '--runroot', join(work, 'run'), '--storage-driver', 'vfs'];
  try {
    await podman(
      [
        ...store,
        'build',
        '--isolation=chroot',
        '--tls-verify=false',
        '--file',
        options.containerfile,
        '--build-arg',
        `BASE=${options.base}`,
        '--tag',
        tag,
        options.context,
      ],
      `podman build of ${options.containerfile}`,
      options,
    );
    const digestFile = join(work, 'digest');
    await podman(
      [...store, 'push', '--tls-verify=false', '--digestfile', digestFile, tag, `docker://${options.target}`],
      `podman push to ${options.target}`,
      options,
    );
    return (await readFile(digestFile, 'utf8')).trim();
  } finally {
    // Rootless, the store's files belong to the user's subordinate ids: only inside podman's namespace can they go.
    if (process.getuid?.() !== 0)
      await podman(['unshare', 'rm', '-rf', join(work, 'storage')], 'podman unshare rm', {
        ...options,
        bus: undefined,
      }).catch(() => {});
    await rm(work, { recursive: true, force: true });
  }
}
