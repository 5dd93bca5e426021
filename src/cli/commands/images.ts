import { DevpivotError, UsageError } from '../../core/errors.js';
import { buildFixture, type Fixture, fixtureState, loadFixture, unreadableForOthers } from '../../fixture/fixture.js';
import type { Command } from '../command.js';

function formatBytes(bytes: number | undefined): string {
  return bytes === undefined ? '?' : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** `images list`: one line per version, then where the repository is. */
export function renderFixture(fixture: Fixture): string {
  const lines = [
    `fixture ${fixture.key} (kernel ${fixture.kernel}, built ${fixture.builtAt} in ${fixture.buildSeconds} s)`,
  ];
  for (const entry of fixture.versions) {
    const where = entry.disk
      ? `${entry.disk} (${formatBytes(fixture.sizes['disk.qcow2'])})`
      : `ostree commit in ${fixture.repo}`;
    lines.push(`  version ${entry.version}  ${entry.commit}  ${where}`);
  }
  return lines.join('\n');
}

export const command: Command = {
  name: 'images',
  summary: 'Build or list the embedded fixture OS images',
  usage: 'build [--force] | list [--json]',
  description:
    'build: build the fixture OS (a bootable qcow2 of version 1 and an ostree repository with versions 1-3) from\n' +
    'Debian packages into the cache directory; a no-op when it is up to date with the recipe and packages.\n' +
    'list: print each version with its ostree commit and, for version 1, the qcow2 path.',
  options: {
    force: { type: 'boolean', description: 'build: rebuild even when up to date' },
    json: { type: 'boolean', description: 'list: print the manifest (paths absolute) as JSON' },
  },
  positionals: [1, 1],
  async run({ args, stdout, stderr, env, signal }) {
    const action = args.positionals[0];
    if (action === 'build') {
      if (args.flag('json')) throw new UsageError('--json is an option of `images list`');
      const started = Date.now();
      const { fixture, built } = await buildFixture({
        env,
        signal,
        force: args.flag('force'),
        onLog: (line) => stderr.write(`${line}\n`),
      });
      if (!built) {
        stdout.write(`fixture OS up to date: ${fixture.dir}\n`);
        return 0;
      }
      stdout.write(`${renderFixture(fixture)}\nbuilt in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
      const problems = await unreadableForOthers(fixture.disk);
      if (problems.length > 0)
        stderr.write(
          `warning: QEMU running as another user (qemu:///system) cannot read ${fixture.disk}: ${problems.join(', ')}\n`,
        );
      return 0;
    }
    if (action === 'list') {
      if (args.flag('force')) throw new UsageError('--force is an option of `images build`');
      let fixture: Fixture;
      try {
        fixture = await loadFixture({ env });
      } catch (error) {
        if (error instanceof DevpivotError && error.code === 'FIXTURE_MISSING' && args.flag('json')) {
          const state = await fixtureState({ env });
          stdout.write(`${JSON.stringify({ built: false, key: state.key, dir: state.dir }, null, 2)}\n`);
          return 1;
        }
        throw error;
      }
      stdout.write(
        args.flag('json') ? `${JSON.stringify({ built: true, ...fixture }, null, 2)}\n` : `${renderFixture(fixture)}\n`,
      );
      return 0;
    }
    throw new UsageError(
      `unknown images action '${action}'`,
      'use: devpivot images build [--force] | devpivot images list [--json]',
    );
  },
};
