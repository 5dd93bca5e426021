/**
 * `bench:pivot`'s memory probe, preloaded into the devpivot it measures (`node --import`): with
 * DEVPIVOT_BENCH_MEMLOG set, one JSON line every 200 ms (and at exit) of the process's own memory: /proc's VmRSS,
 * VmHWM, RssAnon (heaps, Buffers, native allocations), RssFile (mapped code: node, libvirt, koffi) and thread count,
 * and V8's split of the main isolate (heap total/used, external, arrayBuffers). Without the variable it does nothing.
 */
import { appendFileSync, readFileSync } from 'node:fs';

const out = process.env.DEVPIVOT_BENCH_MEMLOG;
if (out) {
  const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;
  const sample = () => {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
    const m = process.memoryUsage();
    const line = {
      at: Date.now(),
      rss: mib(kib('VmRSS') * 1024),
      hwm: mib(kib('VmHWM') * 1024),
      anon: mib(kib('RssAnon') * 1024),
      file: mib(kib('RssFile') * 1024),
      threads: kib('Threads'),
      heapTotal: mib(m.heapTotal),
      heapUsed: mib(m.heapUsed),
      external: mib(m.external),
      arrayBuffers: mib(m.arrayBuffers),
    };
    appendFileSync(out, `${JSON.stringify(line)}\n`);
  };
  setInterval(sample, 200).unref();
  process.on('exit', sample);
}
