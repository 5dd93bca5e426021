import { localEnvironment, type PathKind, type ScenarioEnvironment } from '../../src/scenario/environment.js';

const QCOW2_HEADER = Buffer.from([0x51, 0x46, 0x49, 0xfb, 0, 0, 0, 3]);

/**
 * A ScenarioEnvironment whose file system is `paths` (a qcow2 file, a file with other content, a directory):
 * every other path is missing. Memory, fixture versions and the rest are the local machine's unless overridden.
 */
export function fakeEnvironment(
  paths: Record<string, 'qcow2' | 'file' | 'directory'>,
  overrides: Partial<ScenarioEnvironment> = {},
): ScenarioEnvironment {
  return localEnvironment({
    pathKind: (path): PathKind => {
      const kind = paths[path];
      return kind === undefined ? 'missing' : kind === 'directory' ? 'directory' : 'file';
    },
    readHead: (path, bytes) =>
      paths[path] === 'qcow2'
        ? QCOW2_HEADER.subarray(0, bytes)
        : paths[path] === 'file'
          ? Buffer.from('raw!')
          : undefined,
    ...overrides,
  });
}
