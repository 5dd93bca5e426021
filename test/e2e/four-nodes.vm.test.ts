import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import type { ImageManifest } from '../../src/oci/manifest.js';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

/**
 * scenarios/four-nodes.yaml end to end: four guests pivot at once from one registry (replaces the two-node test:
 * the same per-node attribution, checked on four). On a 2-core TCG host, next to another VM file of the suite.
 */
const NODES = ['node-a', 'node-b', 'node-c', 'node-d'];
const ACCEPT = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'];

test('four-nodes: four nodes pivot concurrently from one registry, each pull attributed to its node', async (t) => {
  // Four TCG guests (five with the suite's other file) on two cores: the scenario's own deadlines add up to 55m.
  t.timeout(40 * 60_000);
  // While the run's registry listens: the manifest of the pushed oscontainer (on the main port: no node).
  let manifest: Promise<ImageManifest> | undefined;
  let url: string | undefined;
  const run = await runScenarioCli('four-nodes', {
    timeoutMs: 39 * 60_000,
    onEvent(event) {
      if (event.kind === 'registry.listening') url ??= event.url;
      if (event.kind === 'image.pushed' && event.ref.includes('/devpivot/fixture-2@') && url && !manifest) {
        const repository = event.ref.slice(event.ref.indexOf('/') + 1, event.ref.indexOf('@'));
        manifest = fetch(`${url}/v2/${repository}/manifests/${event.digest}`, {
          headers: { accept: ACCEPT.join(', ') },
        }).then((response) => response.json() as Promise<ImageManifest>);
      }
    },
  });
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  for (const node of NODES) t.deepEqual(bootedVersions(run.events, node), ['1', '2'], node);

  // Per-node attribution: every blob.progress names one of the two nodes, and each node's finished series are
  // the image's blobs (config and layers), each once, adding up to the image's size.
  t.truthy(manifest, 'the oscontainer was pushed while the registry listened');
  const image = await manifest!;
  const blobs = [image.config, ...image.layers];
  const size = blobs.reduce((sum, blob) => sum + blob.size, 0);
  const progress = run.events.filter((e): e is Stamped<EventOf<'blob.progress'>> => e.kind === 'blob.progress');
  t.true(progress.length > 0);
  t.deepEqual([...new Set(progress.map((e) => e.node))].sort(), NODES, 'blob.progress carries the four node names');
  for (const node of NODES) {
    const finished = progress.filter((e) => e.node === node && e.sent === e.total);
    const bytes = finished.reduce((sum, e) => sum + e.total, 0);
    t.log(`${node}: ${finished.length} blobs, ${bytes} bytes; image ${blobs.length} blobs, ${size} bytes`);
    t.deepEqual(finished.map((e) => e.digest).sort(), blobs.map((blob) => blob.digest).sort(), node);
    t.is(bytes, size, `${node}'s bytes add up to the image size`);
  }
  // The request log names the same nodes: each GET of the manifest by a guest came in on its own port.
  const manifestGets = run.events.filter(
    (e) =>
      e.kind === 'registry.request' && e.method === 'GET' && /\/manifests\/sha256:/.test(e.path) && e.status === 200,
  ) as Stamped<EventOf<'registry.request'>>[];
  for (const node of NODES)
    t.true(
      manifestGets.some((e) => e.node === node),
      `${node} fetched the manifest`,
    );
  const blocked = run.events.filter(
    (e) => e.kind === 'log' && /tried to reach .*: blocked/.test(e.message) && !/reach ipv6:/.test(e.message),
  );
  t.deepEqual(blocked, [], 'each node reached its own port, and nothing blocked it');
  t.deepEqual(leftoverDomains('four-nodes'), []);
});
