import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DevpivotError, UsageError } from '../../core/errors.js';
import { stateDir } from '../../core/paths.js';
import { underPaths } from '../../engine/mirror.js';
import { upstreamClient } from '../../oscontainer/index.js';
import { newCredentials, pullSecret } from '../../registry/auth.js';
import { collectGarbage } from '../../registry/gc.js';
import { startRegistry } from '../../registry/server.js';
import { servingProcesses } from '../../registry/storage/serving.js';
import { RegistryStore } from '../../registry/store.js';
import { registryTls, SERVER_NAMES } from '../../registry/tls.js';
import type { Command, CommandContext } from '../command.js';
import { untilStopped } from '../interrupts.js';

function storageOf({ args, env }: CommandContext): string {
  return args.string('storage') ?? join(stateDir(env), 'registry');
}

function portOf(value: string | undefined): number {
  if (value === undefined) return 5000;
  if (!/^\d+$/.test(value) || Number(value) > 65535)
    throw new UsageError(`invalid --port '${value}'`, 'a port is 0..65535 (0 picks a free port)');
  return Number(value);
}

/** `--max-blob-size SIZE`: bytes, or with a K/M/G/T suffix (powers of 1024). */
function sizeOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+)([KMGT]?)i?B?$/i.exec(value);
  if (!match || Number(match[1]) === 0)
    throw new UsageError(`invalid --max-blob-size '${value}'`, 'give bytes or a size like 512M, 8G (powers of 1024)');
  return Number(match[1]) * 1024 ** ' KMGT'.indexOf((match[2] || ' ').toUpperCase());
}

/** `--upstream URL`: a registry base URL (scheme, host, port), as `registry.upstream` in a scenario. */
function upstreamOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`invalid --upstream '${value}'`, 'give the registry base URL, like http://127.0.0.1:5999');
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.pathname.replace(/\/+$/, '') !== '' || url.search)
    throw new UsageError(
      `invalid --upstream '${value}': it must be http(s)://HOST[:PORT] with no path`,
      'give the registry base URL, like https://quay.io',
    );
  if (url.username || url.password)
    throw new UsageError('--upstream holds credentials', 'log in with skopeo login (auth.json) instead');
  return url.origin;
}

async function serve(context: CommandContext): Promise<number> {
  const { args, bus, stdout, env } = context;
  const storage = storageOf(context);
  const upstream = upstreamOf(args.string('upstream'));
  const covers = args.strings('cover');
  const maxBlobBytes = sizeOf(args.string('max-blob-size'));
  if (covers.length > 0 && !upstream)
    throw new UsageError('--cover needs --upstream', 'name the registry to pull through from with --upstream URL');
  // A pull-through cache for every name would fetch whatever a client asks for from the upstream: never implied.
  if (upstream && covers.length === 0)
    throw new UsageError(
      '--upstream needs --cover: no repository would pull through',
      'name the repositories that pull through with --cover PATH (repeatable), e.g. --cover openshift-release-dev',
    );
  if (!args.flag('quiet')) {
    bus.on('registry.request', (e) =>
      stdout.write(
        `${e.client} ${e.method} ${e.path} ${e.status} ${e.bytes}B ${e.ms}ms${e.length !== undefined && e.bytes < e.length ? ` (cut at ${e.bytes} of ${e.length}B)` : ''}${e.corrupted ? ' (corrupted)' : ''}\n`,
      ),
    );
  }
  if (!args.flag('quiet'))
    bus.on('registry.upstream', (e) =>
      stdout.write(
        `upstream ${e.what} ${e.repository}@${e.digest} ${e.outcome} ${e.bytes}B${e.error ? `: ${e.error}` : ''}\n`,
      ),
    );
  // The CA and the pull secret live beside the storage: a restarted registry keeps the CA its clients trust.
  const trustDir = args.string('tls-dir') ?? join(dirname(storage), 'registry-tls');
  const tls = args.flag('tls') ? await registryTls(trustDir) : undefined;
  const credentials = args.flag('auth') ? newCredentials() : undefined;
  const registry = await startRegistry({
    ...(tls ? { tls } : {}),
    ...(credentials ? { auth: credentials } : {}),
    ...(upstream
      ? {
          pullThrough: {
            upstream: upstreamClient(upstream, { env }),
            covers: (repository: string) => underPaths(covers, repository),
          },
        }
      : {}),
    fsync: !args.flag('no-fsync'),
    ...(maxBlobBytes !== undefined ? { limits: { maxBlobBytes } } : {}),
    host: args.string('host') ?? '127.0.0.1',
    port: portOf(args.string('port')),
    storage,
    bus,
  });
  stdout.write(
    `registry listening on ${registry.url} (storage ${storage})${upstream ? `; pulls through from ${upstream} for ${covers.join(', ')}` : ''}\n`,
  );
  if (tls) stdout.write(`CA ${tls.caFile} (skopeo --cert-dir, curl --cacert, certs.d/HOST:PORT/ca.crt)\n`);
  if (credentials) {
    const file = join(trustDir, 'auth.json');
    const hosts = [...SERVER_NAMES.ip, ...SERVER_NAMES.dns].map((host) => `${host}:${registry.port}`);
    await writeFile(file, pullSecret(credentials, hosts), { mode: 0o600 });
    stdout.write(`pull secret ${file} (REGISTRY_AUTH_FILE / --authfile; valid while this registry runs)\n`);
  }
  await untilStopped(context);
  await registry.stop();
  stdout.write('registry stopped\n');
  return 0;
}

async function gc(context: CommandContext): Promise<number> {
  const { args, stdout } = context;
  const grace = args.string('grace') ?? '3600';
  if (!/^\d+$/.test(grace)) throw new UsageError(`invalid --grace '${grace}'`, 'give whole seconds, e.g. --grace 0');
  const storage = storageOf(context);
  const store = await RegistryStore.open(storage);
  const serving = await servingProcesses(storage);
  const holders = serving.map(({ pid, command }) => `pid ${pid} (${command})`).join(', ');
  if (serving.length > 0 && !args.flag('dry-run'))
    throw new DevpivotError('REGISTRY_STORE_SERVING', `${holders} serves ${storage}; gc would race its pushes`);
  const result = await collectGarbage(store, { graceMs: Number(grace) * 1000, dryRun: args.flag('dry-run') });
  if (args.flag('json')) stdout.write(`${JSON.stringify({ ...result, serving })}\n`);
  else {
    const verb = args.flag('dry-run') ? 'would remove' : 'removed';
    stdout.write(
      `${result.manifests} manifest(s), ${result.markedBlobs} blob(s) in use; ${verb} ${result.removedBlobs.length} blob(s) ` +
        `(${(result.freedBytes / 1048576).toFixed(1)} MiB) and ${result.removedLinks} repository link(s)\n` +
        `(blobs younger than ${grace}s are kept)\n` +
        (serving.length > 0
          ? `note: ${holders} serves this store: gc (without --dry-run) refuses until it stops; this report is a snapshot\n`
          : ''),
    );
  }
  return 0;
}

export const command: Command = {
  name: 'registry',
  summary: 'Run the embedded OCI registry, or collect its garbage',
  usage:
    'serve [--host ADDR] [--port PORT] [--storage DIR] [--max-blob-size SIZE] [--tls [--tls-dir DIR]] [--auth] [--upstream URL --cover PATH...] | gc [--storage DIR] [--grace SECONDS] [--dry-run]',
  description:
    'serve: run the OCI distribution registry (spec v1.1: pull, push, discovery, deletion, referrers) on\n' +
    'loopback until interrupted; prints its URL. gc: remove blobs no manifest references (mark and sweep);\n' +
    'refused while another process serves the store (--dry-run reports it).\n' +
    'Storage defaults to $DEVPIVOT_STATE_DIR/registry (/var/lib/devpivot/registry for root).\n' +
    'serve --upstream URL --cover PATH: a pull-through cache for the repositories under PATH (no others): a blob or\n' +
    'a manifest by digest the store lacks is fetched from URL\n' +
    'once (concurrent requests share the fetch), streamed while stored, then served from the store; tags never\n' +
    'pull through. Credentials come from auth.json as for devpivot pull.\n' +
    'Every port refuses blobs over --max-blob-size (413), a 257th open upload session (429), a blob that would\n' +
    'leave under 256 MiB free (507), headers slower than 30 s or a request slower than 1 h (408), and more\n' +
    'than 256 connections (503).\n' +
    'serve --tls: HTTPS with a CA of its own (made once in --tls-dir, default registry-tls beside the storage; its\n' +
    'certificate names 127.0.0.1, 10.0.2.2 and localhost). serve --auth: HTTP Basic required; a pull secret for\n' +
    'this run is written to auth.json in that directory (mode 0600).',
  positionals: [1, 1],
  options: {
    host: { type: 'string', valueName: 'ADDR', description: 'serve: address to bind (default 127.0.0.1)' },
    port: { type: 'string', short: 'p', valueName: 'PORT', description: 'serve: port (default 5000; 0 = any free)' },
    storage: { type: 'string', valueName: 'DIR', description: 'Storage directory' },
    quiet: { type: 'boolean', short: 'q', description: 'serve: do not log requests' },
    'no-fsync': {
      type: 'boolean',
      description:
        'serve: skip fsync of blob data: faster; a process crash still never exposes a partial blob, a power loss may',
    },
    'max-blob-size': {
      type: 'string',
      valueName: 'SIZE',
      description: 'serve: refuse blobs larger than SIZE (bytes, or 512M, 8G...; default 64G) with 413',
    },
    upstream: {
      type: 'string',
      valueName: 'URL',
      description: 'serve: pull through from this registry (http(s)://HOST[:PORT]) on a miss',
    },
    cover: {
      type: 'string',
      multiple: true,
      valueName: 'PATH',
      description: 'serve: pull through for repositories under PATH (required with --upstream; repeatable)',
    },
    tls: { type: 'boolean', description: 'serve: HTTPS, with a CA devpivot makes (printed)' },
    'tls-dir': { type: 'string', valueName: 'DIR', description: 'serve: where the CA and certificate are kept' },
    auth: { type: 'boolean', description: 'serve: require credentials; writes a pull secret (printed)' },
    grace: { type: 'string', valueName: 'SECONDS', description: 'gc: keep blobs younger than this (default 3600)' },
    'dry-run': { type: 'boolean', description: 'gc: only report what would be removed' },
    json: { type: 'boolean', description: 'gc: print the result as JSON' },
  },
  async run(context) {
    const sub = context.args.positionals[0];
    if (sub === 'serve') return serve(context);
    if (sub === 'gc') return gc(context);
    throw new UsageError(`unknown registry subcommand '${sub}'`, 'use: devpivot registry serve | devpivot registry gc');
  },
};
