/**
 * Who pulled what, per node, as the reporters say it: a real registry with a port per node, real curl clients on
 * two node ports and on the main port, the bus feeding the plain and NDJSON reporters as the CLI does.
 */
import { PassThrough } from 'node:stream';
import test from 'ava';
import type { EventOf, Stamped } from '../../src/core/events.js';
import { createJsonReporter } from '../../src/report/json.js';
import { createPlainReporter } from '../../src/report/plain.js';
import { makeImage, pushImage, run, startTestRegistry } from '../registry/helpers.js';

test("plain names the node that pulled each blob, NDJSON carries node, and each node's bytes are its own", async (t) => {
  const r = await startTestRegistry();
  const plain = new PassThrough();
  const json = new PassThrough();
  let plainText = '';
  let jsonText = '';
  plain.setEncoding('utf8').on('data', (chunk: string) => (plainText += chunk));
  json.setEncoding('utf8').on('data', (chunk: string) => (jsonText += chunk));
  const reporters = [createPlainReporter(plain), createJsonReporter(json)];
  try {
    const image = makeImage([400_000, 900_000]);
    await pushImage(r.url, 'devpivot/fixture-2', image, 'v1');
    r.bus.subscribe((event) => {
      for (const reporter of reporters) reporter.onEvent?.(event);
    });
    const portA = await r.registry.addNodePort('node-a');
    const portB = await r.registry.addNodePort('node-b');
    const [small, big] = image.layers as [(typeof image.layers)[0], (typeof image.layers)[0]];
    const get = (port: number, digest: string) =>
      run('curl', ['-sf', '-o', '/dev/null', `http://127.0.0.1:${port}/v2/devpivot/fixture-2/blobs/${digest}`]);
    const results = await Promise.all([
      get(portA, image.config.digest),
      get(portA, small.digest),
      get(portA, big.digest),
      get(portB, big.digest),
      get(r.registry.port, small.digest),
    ]);
    for (const result of results) t.is(result.code, 0, result.stderr);
    await new Promise((resolve) => setTimeout(resolve, 100));

    const lines = plainText.split('\n');
    const pulled = (who: string, digest: string) =>
      lines.filter((line) => line.includes(`${who} pulled devpivot/fixture-2@${digest.slice(7, 19)}`)).length;
    t.is(pulled('node-a', image.config.digest), 1, plainText);
    t.is(pulled('node-a', small.digest), 1);
    t.is(pulled('node-a', big.digest), 1);
    t.is(pulled('node-b', big.digest), 1);
    t.is(pulled('node-b', small.digest), 0, 'node-b pulled only the big layer');
    t.is(lines.filter((line) => /\] 127\.0\.0\.1:\d+ pulled /.test(line)).length, 1, 'the main port: the client');

    const events = jsonText
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Stamped)
      .filter((e): e is Stamped<EventOf<'blob.progress'>> => e.kind === 'blob.progress' && e.sent === e.total);
    const bytes = (node: string | undefined) =>
      events.filter((e) => e.node === node).reduce((sum, e) => sum + e.total, 0);
    t.is(bytes('node-a'), image.config.size + small.size + big.size, "node-a's bytes: the whole image");
    t.is(bytes('node-b'), big.size);
    t.is(bytes(undefined), small.size);
  } finally {
    await r.close();
  }
});
