/**
 * The fixture's "machine-config-operator image": what the `mcd` driver's units run (docs/PROTOCOLS.md "mcd"). One
 * layer with the MCD stand-in at /usr/bin/machine-config-daemon and a static busybox as /bin/sh with its applets,
 * all it runs before it re-executes itself chrooted into the host (MCO a57ca291 pkg/daemon/daemon.go
 * ReexecuteForTargetRoot). Built in memory from fixed values (sorted entries, mtime 0, uid/gid 0, gzip without a
 * name or time), so the same two input files always give the same digest; pushed like an oscontainer.
 */
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { digestOf } from '../oci/digest.js';
import { FIXED_CREATED, imageManifest } from './image.js';
import { RegistryClient } from './registry-client.js';

export interface McoImageSources {
  /** The stand-in script (images/fixture/mco/machine-config-daemon). */
  standIn: string;
  /** A static busybox (Debian busybox-static's /bin/busybox). */
  busybox: string;
  /** The applets linked to busybox in /bin (default: what the stand-in runs before its re-exec). */
  applets?: readonly string[];
}

/** What the stand-in runs inside the image: glog's fallback, mktemp, the copy to /rootfs/run/bin and the chroot. */
export const MCO_APPLETS = ['sh', 'cat', 'chmod', 'chroot', 'cp', 'date', 'env', 'mkdir', 'mktemp', 'mv', 'rm'];

export interface BuiltMcoImage {
  digest: string;
  manifest: { bytes: Buffer; mediaType: string };
  config: { bytes: Buffer; digest: string };
  layer: { bytes: Buffer; digest: string };
}

type Entry = { name: string; type: 'directory' | 'file' | 'symlink'; mode: number; data?: Buffer; linkname?: string };

async function layerTar(entries: Entry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
  const done = new Promise<void>((resolve, reject) => {
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  for (const entry of [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const header = {
      name: entry.name,
      type: entry.type,
      mode: entry.mode,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
      ...(entry.linkname ? { linkname: entry.linkname } : {}),
    };
    await new Promise<void>((resolve, reject) => {
      const callback = (error?: Error | null) => (error ? reject(error) : resolve());
      if (entry.data) pack.entry(header, entry.data, callback);
      else pack.entry(header, callback);
    });
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

export async function buildMcoImage(sources: McoImageSources): Promise<BuiltMcoImage> {
  const [standIn, busybox] = await Promise.all([readFile(sources.standIn), readFile(sources.busybox)]);
  const entries: Entry[] = [
    { name: 'bin', type: 'directory', mode: 0o755 },
    { name: 'bin/busybox', type: 'file', mode: 0o755, data: busybox },
    ...(sources.applets ?? MCO_APPLETS).map(
      (applet): Entry => ({ name: `bin/${applet}`, type: 'symlink', mode: 0o777, linkname: 'busybox' }),
    ),
    { name: 'rootfs', type: 'directory', mode: 0o755 },
    { name: 'tmp', type: 'directory', mode: 0o1777 },
    { name: 'usr', type: 'directory', mode: 0o755 },
    { name: 'usr/bin', type: 'directory', mode: 0o755 },
    { name: 'usr/bin/machine-config-daemon', type: 'file', mode: 0o755, data: standIn },
  ];
  const raw = await layerTar(entries);
  // Node's gzip header has no name and mtime 0: the bytes depend on the input and zlib only.
  const gz = gzipSync(raw, { level: 9 });
  const layer = { digest: digestOf(gz), diffId: digestOf(raw), size: gz.byteLength };
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: FIXED_CREATED,
      config: {
        Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
        Entrypoint: ['/usr/bin/machine-config-daemon'],
        Labels: { 'io.openshift.release.operator': 'true', 'org.opencontainers.image.title': 'devpivot fixture MCO' },
      },
      rootfs: { type: 'layers', diff_ids: [layer.diffId] },
      history: [{ created: FIXED_CREATED, created_by: 'devpivot: the fixture machine-config-daemon stand-in' }],
    }),
  );
  const manifest = imageManifest(config, layer, false);
  return {
    digest: manifest.digest,
    manifest: { bytes: manifest.bytes, mediaType: manifest.mediaType },
    config: { bytes: config, digest: digestOf(config) },
    layer: { bytes: gz, digest: layer.digest },
  };
}

async function* once(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes;
}

/** Push to `registry` (host:port, plain HTTP on loopback) as `repository:tag`; returns the manifest digest. */
export async function pushMcoImage(
  image: BuiltMcoImage,
  registry: string,
  repository: string,
  tag = 'latest',
): Promise<string> {
  const client = new RegistryClient(registry);
  for (const blob of [image.layer, image.config]) {
    if ((await client.hasBlob(repository, blob.digest)) === null)
      await client.uploadBlob(repository, blob.digest, once(blob.bytes));
  }
  return client.putManifest(repository, tag, image.manifest.bytes, image.manifest.mediaType);
}
