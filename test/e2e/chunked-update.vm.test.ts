import test from 'ava';
import { bootedVersions, leftoverDomains, runScenarioCli } from './run-scenario.js';

test.serial('chunked-update: v1 chunked, then v2 chunked fetches only the 2 changed layers', async (t) => {
  const run = await runScenarioCli('chunked-update');
  t.is(run.code, 0, `${run.steps.join('\n')}\n${run.stderr}`);
  t.true(
    run.steps.every((step) => step.startsWith('✓ ')),
    run.steps.join('\n'),
  );
  t.deepEqual(bootedVersions(run.events), ['1', '1', '2']);
  // bootc's own count, from what the pivot step's request printed (logged per line)
  const said = run.events.flatMap((e) => (e.kind === 'log' && e.source === 'node1' ? [e.message] : []));
  t.true(
    said.some((line) => /^layers already present: 7; layers needed: 2 \(\d/.test(line)),
    said.join('\n'),
  );
  // From the registry's own log: the blobs node1 fetched after the pivot request to v2c, whole.
  const pushed = run.events.filter((e) => e.kind === 'image.pushed');
  t.is(pushed.length, 2);
  const requests = run.events.filter(
    (e): e is Extract<typeof e, { kind: 'registry.request' }> =>
      e.kind === 'registry.request' && e.node === 'node1' && e.method === 'GET' && e.path.includes('/blobs/'),
  );
  const v2Blobs = requests.filter((e) => e.path.includes('/devpivot/v2c/'));
  const v1Blobs = requests.filter((e) => e.path.includes('/devpivot/v1c/'));
  // Distinct blobs: the 9 layers (v1c) or the 2 changed ones (v2c), and the image config (read by skopeo inspect
  // and copy); the step `assert: { fetched, layers }` counted the layers alone.
  const distinct = (list: typeof requests) => new Set(list.map((e) => e.path.split('/').pop())).size;
  t.is(distinct(v1Blobs), 10, v1Blobs.map((e) => e.path).join('\n'));
  t.is(distinct(v2Blobs), 3, v2Blobs.map((e) => e.path).join('\n'));
  const fetchedBytes = v2Blobs.reduce((sum, e) => sum + e.bytes, 0);
  const imageBytes = v1Blobs.reduce((sum, e) => sum + e.bytes, 0);
  t.true(fetchedBytes < imageBytes / 10, `v2 fetched ${fetchedBytes} of ${imageBytes} bytes`);
  t.log(`v2 fetched ${fetchedBytes} bytes; the whole v1 image is ${imageBytes} bytes`);
  t.deepEqual(leftoverDomains('chunked-update'), []);
});
