/**
 * Shared by the fixture OS's VM test files (fixture.vm.test.ts, fixture-power-loss.vm.test.ts): the fixture, an
 * embedded registry holding an oscontainer of each fixture version, devpivot's legacy Ignition for a target, and a
 * VM that is destroyed by exact name (and logs the console's key lines on failure).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestFn } from 'ava';
import { type Fixture, loadFixture } from '../../src/fixture/fixture.js';
import { generateIgnition, type IgnitionConfig, serializeIgnition } from '../../src/ignition/index.js';
import { buildOscontainer, pushOscontainer } from '../../src/oscontainer/index.js';
import { type RunningRegistry, startRegistry } from '../../src/registry/index.js';
import { FixtureVm, type ReportLine } from '../helpers/fixture-vm.js';

export const BOOT_S = 180_000;
export const PIVOT_S = 240_000;

export interface Extra {
  files?: Array<{ path: string; text: string }>;
  units?: Array<{ name: string; enabled?: boolean; contents: string }>;
  kernelArgs?: string[];
  sshKeys?: string[];
  trust?: boolean;
}

export interface FixtureContext {
  fixture: Fixture;
  registry: RunningRegistry;
  /** Image references as the guest reaches them (10.0.2.2 = host loopback), by fixture version. */
  pinned: Record<string, string>;
}

/**
 * Register `before` (load the fixture, start a registry, push an oscontainer of each of `versions`) and
 * `after.always` (stop it, remove its storage) on `test`; the context is filled once `before` ran.
 */
export function useFixtureRegistry(test: TestFn, versions?: string[]): FixtureContext {
  const context = { pinned: {} } as FixtureContext;
  let storage: string | undefined;
  test.before(async () => {
    context.fixture = await loadFixture();
    storage = await mkdtemp(join(tmpdir(), 'devpivot-images-vm-'));
    context.registry = await startRegistry({ storage });
    for (const entry of context.fixture.versions) {
      if (versions && !versions.includes(entry.version)) continue;
      const image = await buildOscontainer({ repo: context.fixture.repo, commit: entry.commit });
      try {
        const pushed = await pushOscontainer(image, `${context.registry.address}/fixture/os:v${entry.version}`);
        context.pinned[entry.version] = `10.0.2.2:${context.registry.port}/fixture/os@${pushed.digest}`;
      } finally {
        await image.dispose();
      }
    }
  });
  test.after.always(async () => {
    await context.registry?.stop();
    if (storage) await rm(storage, { recursive: true, force: true });
  });
  return context;
}

export function configFor(context: FixtureContext, target: string, extra: Extra = {}): IgnitionConfig {
  return generateIgnition({
    driver: 'legacy',
    image: target,
    spec: '3.3.0',
    ...(extra.trust === false ? {} : { registry: { hostPort: `10.0.2.2:${context.registry.port}`, insecure: true } }),
    kernelArgs: extra.kernelArgs ?? [],
    ...(extra.sshKeys ? { sshKeys: extra.sshKeys } : {}),
    extra: {
      ignition: { version: '3.3.0' },
      storage: {
        files: (extra.files ?? []).map((file) => ({
          path: file.path,
          mode: 0o644,
          overwrite: true, // /etc/issue exists in the image, as on RHCOS
          contents: { source: `data:,${encodeURIComponent(file.text)}` },
        })),
      },
      systemd: { units: extra.units ?? [] },
    },
  });
}

export const ignitionFor = (context: FixtureContext, target: string, extra: Extra = {}) =>
  serializeIgnition(configFor(context, target, extra));

export function commitOf(context: FixtureContext, version: string): string {
  return context.fixture.versions.find((entry) => entry.version === version)!.commit;
}

export const booted = (reports: ReportLine[]) => reports.filter((report) => report.event === 'booted');
export { glog } from '../helpers/glog.js';
export const BOOTED = /devpivot-report: \{"event":"booted"/;
/** The boot image's own origin: RHCOS images carry `pivot://<oscontainer>`, the fixture's v1 names its commit. */
export const bootImage = (context: FixtureContext) => `fixture.invalid/fixture-coreos@sha256:${commitOf(context, '1')}`;

export async function withVm(
  t: { log: (s: string) => void },
  context: FixtureContext,
  ignition: string,
  body: (vm: FixtureVm) => Promise<void>,
) {
  const vm = await FixtureVm.create(context.fixture.disk, ignition);
  try {
    await body(vm);
  } catch (error) {
    const lines = await vm.lines();
    // What the update tools and the shutdown said over the whole session, then the console's end.
    const key = /pivot\[|ostree|fixture-|rpm-ostree|bootc|FAILED|Booting `|reboot|Ignition/;
    const keyLines = lines.filter((line) => key.test(line)).slice(-80);
    t.log(`key lines:\n${keyLines.join('\n')}`);
    t.log(lines.slice(-60).join('\n'));
    throw error;
  } finally {
    await vm.dispose();
  }
}
