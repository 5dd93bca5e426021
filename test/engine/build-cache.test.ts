/**
 * The engine's oscontainer build cache (engine/real-deps.ts): the embedded registry listens on a new port every
 * run but keeps its storage, so a second run must find the image it pushed and skip the build (it used to key on
 * host:port and rebuild and push 61 MB every run). Real fixture, real registry, real build.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';
import { realDeps } from '../../src/engine/real-deps.js';
import { loadFixture } from '../../src/fixture/fixture.js';

test('a second run on another port of the same storage reuses the build; the first pushed in process', async (t) => {
  t.timeout(120_000);
  const dir = await mkdtemp(join(tmpdir(), 'devpivot-build-cache-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const fixture = await loadFixture();
  const commit = fixture.versions.find((v) => v.version === '2')!.commit;
  const run = async () => {
    const bus = new EventBus();
    const events: Stamped[] = [];
    bus.subscribe((event) => events.push(event));
    const deps = realDeps({ stateDir: join(dir, 'state') });
    const registry = await deps.startRegistry({ host: '127.0.0.1', port: 0, storage: join(dir, 'registry'), bus });
    try {
      const image = await deps.buildOscontainer({
        source: { repo: fixture.repo, commit },
        registry: registry.url,
        repository: 'devpivot/fixture-2',
        bus,
        signal: new AbortController().signal,
      });
      return { image, events, port: registry.port };
    } finally {
      await registry.stop();
    }
  };
  const first = await run();
  const second = await run();
  t.not(first.port, second.port, 'the two registries listened on different ports');
  t.true(
    first.events.some((e) => e.kind === 'image.built'),
    'the first run built',
  );
  // In process: the push went to the store, not over HTTP to ourselves (no upload requests).
  t.deepEqual(
    first.events.filter((e) => e.kind === 'registry.request'),
    [],
  );
  t.false(
    second.events.some((e) => e.kind === 'image.built'),
    'the second run did not build',
  );
  t.is(second.image.digest, first.image.digest);
  t.true(second.events.some((e) => e.kind === 'image.pushed' && e.digest === first.image.digest));
  const cache = JSON.parse(await readFile(join(dir, 'state', 'oscontainer-builds.json'), 'utf8')) as object;
  t.deepEqual(
    Object.keys(cache).map((key) => key.split('|')[0]),
    ['embedded/devpivot/fixture-2'],
  );
});
