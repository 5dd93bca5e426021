import { join } from 'node:path';
import { cacheDir } from '../../core/paths.js';
import { localRepository, parseLocalSource, resolveLocalSource } from '../../oci/local-source.js';
import { parseReference } from '../../oci/reference.js';
import { copyImage } from '../../oscontainer/copy.js';
import { importLocalImage } from '../../oscontainer/local-image.js';
import type { Command } from '../command.js';
import { showImageProgress } from '../image-progress.js';

export const command: Command = {
  name: 'pull',
  summary: 'Copy an image from a registry into another registry or an OCI layout',
  usage: 'SRC [--to DEST] [--all]',
  description:
    'Copy SRC (HOST[:PORT]/REPO[:TAG|@DIGEST], or a local image: containers-storage:IMAGE, oci-archive:PATH[:REF],\n' +
    'oci:DIR[:REF], read with skopeo) to DEST, keeping every digest: DEST is another registry reference\n' +
    '(e.g. the embedded registry, 127.0.0.1:5000/os/rhcos:v2) or oci:DIR[:TAG]. Default DEST: an OCI layout in\n' +
    "devpivot's cache. Credentials: REGISTRY_AUTH_FILE, containers auth.json, ~/.docker/config.json (Basic and\n" +
    'Bearer token auth). Interrupted blob downloads resume. From a multi-platform index only linux/amd64 is\n' +
    'copied unless --all. Prints DEST@DIGEST. HTTPS registries with a private CA: set NODE_EXTRA_CA_CERTS=ca.pem.',
  positionals: [1, 1],
  options: {
    to: { type: 'string', valueName: 'DEST', description: 'Registry reference or oci:DIR[:TAG]' },
    all: { type: 'boolean', description: 'Copy every platform of a multi-platform image' },
    insecure: { type: 'boolean', description: 'Plain HTTP to non-loopback registries' },
    json: { type: 'boolean', description: 'Print {digest, manifests, blobsCopied, blobsSkipped} as JSON' },
  },
  async run({ args, bus, stdout, stderr, env, signal }) {
    const source = args.positionals[0]!;
    const local = parseLocalSource(source);
    const src = local ? undefined : parseReference(source);
    const destination =
      args.string('to') ??
      (src
        ? `oci:${join(cacheDir(env), 'oci', src.registry.replace(':', '_'), src.repository)}:${src.tag ?? 'latest'}`
        : `oci:${join(cacheDir(env), 'oci', localRepository(local!))}:latest`);
    const stop = showImageProgress(bus, stderr);
    try {
      const options = { all: args.flag('all'), insecure: args.flag('insecure'), env, signal, bus };
      const result = local
        ? await importLocalImage(resolveLocalSource(local, process.cwd()), destination, options)
        : await copyImage(source, destination, options);
      stop();
      if (args.flag('json')) stdout.write(`${JSON.stringify({ destination, ...result }, null, 2)}\n`);
      else {
        const base = destination.startsWith('oci:')
          ? destination
          : `${parseReference(destination).registry}/${parseReference(destination).repository}`;
        stderr.write(`copied ${result.blobsCopied} blob(s), ${result.blobsSkipped} already there\n`);
        stdout.write(`${base}@${result.digest}\n`);
      }
    } finally {
      stop();
    }
    return 0;
  },
};
