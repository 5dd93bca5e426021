/**
 * The VM layer with its real target: the fixture OS disk booted through firmware (SeaBIOS → GRUB → kernel) from
 * a qcow2 overlay, the base uploaded once into the devpivot pool through a libvirt stream, Ignition delivered
 * through fw_cfg. Needs `devpivot images build` (the test set-up builds it).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { EventBus } from '../../src/core/bus.js';
import type { Stamped } from '../../src/core/events.js';
import { loadFixture } from '../../src/fixture/fixture.js';
import { reportFragment } from '../../src/ignition/fragments.js';
import { render, serializeIgnition } from '../../src/ignition/render.js';
import { volumePrefix } from '../../src/vm/domain-xml.js';
import { Connection } from '../../src/vm/libvirt/connection.js';
import { openHost } from '../../src/vm/libvirt/index.js';
import { listDevpivotVolumes } from '../../src/vm/libvirt/inventory.js';
import { tempDir } from '../helpers/temp.js';
import { startTestDaemon } from './daemon.js';

test('the fixture disk boots from an overlay, runs Ignition from fw_cfg and reports its boot', async (t) => {
  const fixture = await loadFixture();
  const bus = new EventBus();
  const events: Stamped[] = [];
  bus.subscribe((event) => events.push(event));
  const sessionId = `test-vm-fixture-${randomBytes(3).toString('hex')}`;
  const stateDir = tempDir('devpivot-test-vm-state-');
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 50);
  const host = await openHost({ uri: 'qemu:///system', sessionId, bus, stateDir });
  const t0 = Date.now();
  try {
    const node = await host.createNode({
      name: 'n1',
      image: fixture.disk,
      // devpivot's boot report unit (the fixture prints no report of its own, as RHCOS) and one file
      ignition: serializeIgnition(
        render(
          // the report's own files (its script) and one more
          (() => {
            const report = reportFragment();
            return {
              ...report,
              files: [...report.files, { path: '/etc/devpivot-test', contents: 'vm-layer', mode: 0o644 }],
            };
          })(),
          '3.3.0',
        ),
      ),
      memoryMiB: 1024,
      vcpus: 1,
      firmware: 'bios',
    });
    const created = Date.now() - t0;
    const upload = events.filter((e) => e.kind === 'image.progress');
    await node.start();
    const first = await bus.once('vm.console', () => true, AbortSignal.timeout(60_000));
    const ignition = await bus.once(
      'vm.console',
      (e) => e.line.includes('Reached target ignition-complete.target') || e.line.includes('Ignition has failed'),
      AbortSignal.timeout(240_000),
    );
    t.regex(ignition.line, /Reached target ignition-complete\.target/);
    const booted = await bus.once(
      'vm.console',
      // anywhere in the line: the serial getty's prompt may come first ("fixture login: devpivot-report: …")
      (e) => e.line.includes('devpivot-report: {"event":"booted"'),
      AbortSignal.timeout(240_000),
    );
    const report = JSON.parse(
      booted.line.slice(booted.line.indexOf('devpivot-report: ') + 'devpivot-report: '.length),
    ) as { version: string; commit: string };
    t.is(report.commit, fixture.versions[0]!.commit);
    t.log(`create incl. base upload: ${created} ms (${upload.length} progress events)`);
    t.log(`create -> first console line: ${first.at - t0} ms; -> Ignition done: ${ignition.at - t0} ms`);
    t.log(`create -> booted report: ${booted.at - t0} ms; main thread ${ticks} ticks of 50 ms`);
    t.true(ticks >= ((Date.now() - t0) / 50) * 0.8, 'main thread responsive');
    await node.destroy();
  } finally {
    clearInterval(ticker);
    await host.destroyAll();
    await host.close();
  }
  const conn = await Connection.open('qemu:///system');
  try {
    const left = await conn.lookupDomain(`devpivot-${sessionId}-n1`);
    t.is(left, undefined);
    const volumes = await listDevpivotVolumes(conn);
    t.deepEqual(
      volumes.filter((v) => v.name.startsWith(volumePrefix(sessionId))),
      [],
    );
  } finally {
    await conn.close();
  }
});

test('the base image is uploaded once through a stream (remote daemon), intact, then reused', async (t) => {
  const fixture = await loadFixture();
  const daemon = await startTestDaemon();
  try {
    const stateDir = tempDir('devpivot-test-vm-state-');
    const spec = {
      name: 'n1',
      image: fixture.disk,
      ignition: '{}',
      memoryMiB: 512,
      vcpus: 1,
      firmware: 'bios' as const,
    };
    const bus = new EventBus();
    const progress: number[] = [];
    bus.on('image.progress', (e) => progress.push(e.done));
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 50);
    const open = (tag: string) =>
      openHost({
        uri: daemon.tcpUri,
        sessionId: `test-vm-${tag}-${randomBytes(3).toString('hex')}`,
        bus,
        stateDir,
        poolPath: daemon.poolPath,
        domainType: 'qemu',
      });
    const first = await open('upload');
    const t0 = Date.now();
    await first.createNode(spec);
    const uploadMs = Date.now() - t0;
    clearInterval(ticker);
    await first.destroyAll();
    await first.close();
    t.true(progress.length > 10, 'upload progress is reported');
    t.is(progress.at(-1), (await import('node:fs')).statSync(fixture.disk).size);
    const second = await open('reuse');
    const t1 = Date.now();
    progress.length = 0;
    await second.createNode(spec);
    const reuseMs = Date.now() - t1;
    await second.destroyAll();
    await second.close();
    t.is(progress.length, 0, 'the second session reuses the uploaded base');
    const digest = async (path: string) => {
      const hash = createHash('sha256');
      for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
      return hash.digest('hex');
    };
    const want = await digest(fixture.disk);
    const volume = join(daemon.poolPath, `devpivot-base-${want.slice(0, 16)}.qcow2`);
    t.is(await digest(volume), want, 'the uploaded volume is byte-identical');
    const mib = (await import('node:fs')).statSync(fixture.disk).size / 2 ** 20;
    t.log(
      `upload of ${mib.toFixed(0)} MiB over qemu+tcp: ${uploadMs} ms (${(mib / (uploadMs / 1000)).toFixed(0)} MiB/s)`,
    );
    t.log(`main thread during the upload: ${ticks} ticks of 50 ms for ${Math.floor(uploadMs / 50)} expected`);
    t.log(`second session (base reused): ${reuseMs} ms`);
  } finally {
    await daemon.dispose();
  }
});
