/** Node ports are read-only (issue 28 item 4): GET and HEAD answer; every other method is 405 UNSUPPORTED. */
import test from 'ava';
import { curl, makeImage, pushImage, startTestRegistry } from './helpers.js';

test('a node port answers GET and HEAD and refuses DELETE, PUT, POST and PATCH with 405 UNSUPPORTED (curl)', async (t) => {
  const r = await startTestRegistry();
  t.teardown(() => r.close());
  const image = makeImage([10_000]);
  await pushImage(r.url, 'ro/os', image, 'v1');
  const node = `http://127.0.0.1:${await r.registry.addNodePort('node-a')}`;
  const manifest = `${node}/v2/ro/os/manifests/v1`;
  t.is((await curl([manifest, '-H', 'Accept: application/vnd.oci.image.manifest.v1+json'])).status, 200);
  t.is((await curl(['-I', manifest])).status, 200);
  const writes: [string, string][] = [
    ['DELETE', manifest],
    ['PUT', `${node}/v2/ro/os/manifests/v2`],
    ['POST', `${node}/v2/ro/os/blobs/uploads/`],
    ['PATCH', `${node}/v2/ro/os/blobs/uploads/x`],
    ['DELETE', `${node}/v2/ro/os/blobs/${image.layers[0]!.digest}`],
  ];
  for (const [method, url] of writes) {
    const answer = await curl(['-X', method, '--data-binary', 'x', url]);
    t.is(answer.status, 405, `${method} ${url}`);
    t.is((JSON.parse(answer.body) as { errors: { code: string }[] }).errors[0]?.code, 'UNSUPPORTED');
  }
  t.truthy(await r.registry.store.getManifest('ro/os', 'v1'), 'the manifest is still there');
  t.is(
    (await curl(['-X', 'POST', `${r.url}/v2/ro/os/blobs/uploads/`])).status,
    202,
    'the main port still takes pushes',
  );
});
