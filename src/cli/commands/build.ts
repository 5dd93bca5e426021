import { UsageError } from '../../core/errors.js';
import { loadFixture } from '../../fixture/fixture.js';
import { LAYER_COMPRESSIONS, type LayerCompression } from '../../oci/format.js';
import { parseReference } from '../../oci/reference.js';
import { buildOscontainer, OSCONTAINER_FORMATS, type OscontainerFormat } from '../../oscontainer/build.js';
import { pushOscontainer } from '../../oscontainer/push.js';
import { buildDerivedCommand } from '../build-derived.js';
import type { Command } from '../command.js';
import { showImageProgress } from '../image-progress.js';

/** `--fixture N`: version N (by name, else by position) of the built fixture OS. */
async function fixtureVersion(wanted: string, env: NodeJS.ProcessEnv) {
  const fixture = await loadFixture({ env });
  const match = fixture.versions.find((v) => v.version === wanted) ?? fixture.versions[Number(wanted) - 1];
  if (!match) {
    throw new UsageError(
      `the fixture has no version '${wanted}'`,
      `pick one of: ${fixture.versions.map((v) => v.version).join(', ')}`,
    );
  }
  return { repo: fixture.repo, commit: match.commit, components: fixture.components };
}

export const command: Command = {
  name: 'build',
  summary: 'Build an oscontainer from an ostree commit and push it',
  usage:
    '(--fixture N | --ostree-repo REPO --commit C | --from-dir ROOTFS --version V) [--format legacy|native] ' +
    '[--layers N] [--compression gzip|zstd] [--push REF] [--oci] | --containerfile FILE --from REF --push REF [--context DIR]',
  description:
    'Build an oscontainer reproducibly: the same commit always gives the same digest.\n' +
    '  legacy (default): one layer holding /srv/repo, an archive ostree repo with exactly that commit;\n' +
    '    labels com.coreos.ostree-commit and version (pivot, MCO up to 4.13).\n' +
    "  native: the ostree-ext container format (the commit's objects under sysroot/ostree/repo plus the tree as\n" +
    '    hard links); labels ostree.bootable, containers.bootc, ostree.commit (rpm-ostree rebase, bootc switch).\n' +
    'With --push, upload it and print the image by digest (HOST:PORT/REPO@sha256:…) on stdout.\n' +
    '--containerfile: a derived image, built by podman (--build-arg BASE=REF of --from) and pushed by podman.',
  options: {
    fixture: { type: 'string', valueName: 'N', description: 'Use version N of the built-in fixture OS' },
    'ostree-repo': { type: 'string', valueName: 'REPO', description: 'ostree repository holding the commit' },
    commit: { type: 'string', valueName: 'C', description: 'Commit checksum or ref in --ostree-repo' },
    'from-dir': { type: 'string', valueName: 'ROOTFS', description: 'Commit this directory tree first' },
    version: { type: 'string', valueName: 'V', description: "The image's version label (required with --from-dir)" },
    format: {
      type: 'string',
      valueName: 'FORMAT',
      description: 'legacy (/srv/repo, the default) or native (ostree-ext, bootable)',
    },
    layers: {
      type: 'string',
      valueName: 'N',
      description: 'native, --fixture: chunk the packages into N layers (at least 4), plus the commit layer',
    },
    compression: {
      type: 'string',
      valueName: 'C',
      description:
        'native: gzip (the default: what every rpm-ostree and bootc reads) or zstd (an OCI image; ostree-ext reads it since 2024, RHCOS 4.13 does not)',
    },
    push: { type: 'string', valueName: 'REF', description: 'Push to HOST:PORT/REPO:TAG' },
    oci: { type: 'boolean', description: 'OCI manifest and media types (default: Docker v2 schema 2)' },
    insecure: { type: 'boolean', description: 'Plain HTTP to a non-loopback registry' },
    level: {
      type: 'string',
      valueName: '1-9',
      description:
        'gzip level (default 6); chunks that do not compress (zlib objects) are stored; native: objects the ' +
        'repo already compressed are kept as they are',
    },
    json: { type: 'boolean', description: 'Print {format, digest, pinned, commit, version, layer, layers} as JSON' },
    containerfile: {
      type: 'string',
      valueName: 'FILE',
      description: 'Build a derived image with podman from FILE (ARG BASE / FROM $BASE); needs --from and --push',
    },
    from: { type: 'string', valueName: 'REF', description: 'With --containerfile: the base image (BASE)' },
    context: { type: 'string', valueName: 'DIR', description: "With --containerfile: the build context (FILE's dir)" },
  },
  async run({ args, bus, stdout, stderr, env, signal }) {
    const containerfile = args.string('containerfile');
    if (containerfile !== undefined) {
      const derived = await buildDerivedCommand({
        containerfile,
        from: args.string('from'),
        push: args.string('push'),
        context: args.string('context'),
        bus,
        env,
        signal,
      });
      if (args.flag('json')) stdout.write(`${JSON.stringify(derived, null, 2)}\n`);
      else stdout.write(`${derived.pinned}\n`);
      return 0;
    }
    const sources = ['fixture', 'ostree-repo', 'from-dir'].filter((name) => args.string(name) !== undefined);
    if (sources.length !== 1) {
      throw new UsageError(
        sources.length === 0 ? 'nothing to build' : `--${sources.join(' and --')} exclude each other`,
        'pass one of --fixture N, --ostree-repo REPO --commit C, --from-dir ROOTFS --version V',
      );
    }
    if (args.string('ostree-repo') && !args.string('commit')) {
      throw new UsageError('--ostree-repo needs --commit', 'pass the commit checksum or a ref, e.g. --commit os/v2');
    }
    const level = args.string('level') === undefined ? undefined : Number(args.string('level'));
    if (level !== undefined && !(Number.isInteger(level) && level >= 1 && level <= 9)) {
      throw new UsageError(`invalid --level '${args.string('level')}'`, 'gzip levels are 1 (fast) to 9 (small)');
    }
    const format = (args.string('format') ?? 'legacy') as OscontainerFormat;
    if (!OSCONTAINER_FORMATS.includes(format)) {
      throw new UsageError(`unknown --format '${format}'`, `pick one of: ${OSCONTAINER_FORMATS.join(', ')}`);
    }
    const layersText = args.string('layers');
    const layers = layersText === undefined ? undefined : Number(layersText);
    if (layers !== undefined && !(Number.isInteger(layers) && layers >= 4 && layers <= 128))
      throw new UsageError(
        `invalid --layers '${layersText}'`,
        'ostree-ext chunks into 4 to 128 layers (64 by default)',
      );
    if (layers !== undefined && format !== 'native')
      throw new UsageError('--layers applies to --format native', 'add --format native');
    if (layers !== undefined && !args.string('fixture'))
      throw new UsageError(
        '--layers needs --fixture N',
        "chunking groups files by package: only the fixture's build says which package each file comes from",
      );
    const compressionText = args.string('compression');
    const compression = compressionText as LayerCompression | undefined;
    if (compression !== undefined && !LAYER_COMPRESSIONS.includes(compression))
      throw new UsageError(
        `unknown --compression '${compressionText}'`,
        `pick one of: ${LAYER_COMPRESSIONS.join(', ')}`,
      );
    if (compression === 'zstd' && format !== 'native')
      throw new UsageError(
        '--compression zstd applies to --format native',
        "a legacy oscontainer's layer is gzip, what openshift/pivot reads",
      );
    const target = args.string('push');
    if (target) parseReference(target); // fail on a bad reference before the long build
    const source = args.string('fixture')
      ? await fixtureVersion(args.string('fixture')!, env)
      : { repo: args.string('ostree-repo'), commit: args.string('commit') };
    const stop = showImageProgress(bus, stderr);
    try {
      const image = await buildOscontainer({
        ...source,
        fromDir: args.string('from-dir'),
        version: args.string('version'),
        format,
        oci: args.flag('oci'),
        ...(layers !== undefined ? { layers } : {}),
        ...(compression ? { compression } : {}),
        gzip: level === undefined ? undefined : { level },
        bus,
        ref: target ?? 'oscontainer',
        signal,
      });
      try {
        const pushed = target
          ? await pushOscontainer(image, target, { bus, signal, insecure: args.flag('insecure') })
          : undefined;
        stop();
        const summary = {
          format: image.format,
          digest: image.digest,
          pinned: pushed?.pinned ?? null,
          commit: image.commit,
          version: image.version,
          layer: { digest: image.layer.digest, diffId: image.layer.diffId, size: image.layer.size },
          layers: image.layers.map((layer) => ({ digest: layer.digest, diffId: layer.diffId, size: layer.size })),
        };
        if (args.flag('json')) stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
        else {
          stderr.write(
            `built ${image.format} oscontainer ${image.version} (${image.commit.slice(0, 12)}), ` +
              (image.layers.length === 1
                ? `layer ${image.layer.size} bytes\n`
                : `${image.layers.length} layers, ${image.layers.reduce((sum, l) => sum + l.size, 0)} bytes\n`),
          );
          stdout.write(`${pushed?.pinned ?? image.digest}\n`);
        }
      } finally {
        await image.dispose();
      }
    } finally {
      stop();
    }
    return 0;
  },
};
